package backendtest

import (
	"fmt"
	"testing"

	"wasmllm/cpu"
)

func TestCPU(t *testing.T) { Run(t, cpu.New(0), Options{AllKVHeadDims: true}) }

// TestCPURanks runs the suite with every weight matrix split across 2 and
// 3 ranks (goroutines standing in for the browser's workers).
func TestCPURanks(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			Run(t, cpu.NewLocalRanks(cpu.RankOptions{Ranks: n, MinShardBytes: 1}), Options{AllKVHeadDims: true})
		})
	}
}

// TestCPUPlainGo runs the suite with the native SIMD kernels off (the
// plain-Go loops they are checked against, as on a CPU without AVX2).
func TestCPUPlainGo(t *testing.T) {
	was := cpu.UseSIMD(false)
	defer cpu.UseSIMD(was)
	if cpu.SIMD() {
		t.Fatal("UseSIMD(false), and SIMD() is true")
	}
	Run(t, cpu.New(0), Options{AllKVHeadDims: true})
}
