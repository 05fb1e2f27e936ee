package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"wasmllm/loader"
)

// simdWeight is wf (N, K) as a weight of type dt: F32, ggml's Q8_0 and
// Q4_0 blocks, or the planar q8/q4 made from them.
func simdWeight(t *testing.T, dt loader.DType, N, K int, wf []float32) *loader.Tensor {
	t.Helper()
	block, planar := map[loader.DType]loader.DType{loader.Q8: loader.Q8_0, loader.Q4: loader.Q4_0}[dt]
	if !planar {
		block = dt
	}
	data, err := loader.Quantize(block, wf)
	if err != nil {
		t.Fatal(err)
	}
	lt := &loader.Tensor{Name: "w", Shape: []int{N, K}, DType: block, Data: data}
	if planar {
		if lt, err = loader.ToPlanar(lt); err != nil {
			t.Fatal(err)
		}
	}
	return lt
}

// sameBits runs f on the SIMD kernels and on the Go loops, and fails on
// the first element whose bits differ.
func sameBits(t *testing.T, what fmt.Stringer, f func() []float32) {
	t.Helper()
	got := f()
	saved := simd
	simd = nil
	want := f()
	simd = saved
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%v [%d]: SIMD %v, Go %v", what, i, got[i], want[i])
		}
	}
}

// label is a test case's name for sameBits.
type label string

func (l label) String() string { return string(l) }

// kquantWeight is a random (N, K) weight of K-quant type dt: random bytes
// (every quant and sub-block scale pattern occurs) with small finite
// f16 scales.
func kquantWeight(rng *rand.Rand, dt loader.DType, N, K int) *loader.Tensor {
	scales := map[loader.DType][]int{loader.Q2_K: {80, 82}, loader.Q3_K: {108}, loader.Q4_K: {0, 2}, loader.Q5_K: {0, 2}, loader.Q6_K: {208}}
	bb := dt.BlockBytes()
	data := make([]byte, N*K/256*bb)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for b := 0; b < len(data)/bb; b++ {
		for _, off := range scales[dt] {
			h := loader.F32ToF16((rng.Float32() + 0.05) * 0.004)
			data[b*bb+off], data[b*bb+off+1] = byte(h), byte(h>>8)
		}
	}
	return &loader.Tensor{Name: "w", Shape: []int{N, K}, DType: dt, Data: data}
}
