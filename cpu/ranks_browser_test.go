//go:build js

package cpu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"wasmllm/loader"
	"wasmllm/model"
)

// TestRanksInWorkers splits weights across 2 and 3 ranks in Web Workers
// (each its own instance of this test binary) and checks the matmul and
// the lookup against one rank, bit for bit, on the SIMD kernels where the
// page has them.
func TestRanksInWorkers(t *testing.T) {
	if ok, why := RanksAvailable(); !ok {
		t.Fatal(why)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, ranks := range []int{2, 3, 4} {
		b, err := NewRanks(RankOptions{Ranks: ranks, MinShardBytes: 1, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, dt := range []loader.DType{loader.F32, loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4, loader.Q4_K, loader.Q6_K} {
			for _, sh := range [][2]int{{100, 256}, {1000, 512}} {
				checkRanked(t, r, b, rankWeight(t, r, dt, sh[0], sh[1]), []int{1, 17}, dt == loader.Q4)
			}
		}
		b.Close()
	}
}

// TestRanksWorkerDies marks a rank dead as rank.js does when its program
// ends or throws, and checks that the next matmul fails with a RankError
// naming it at once, not after the timeout; and that a rank that stops
// answering (told to quit, unmarked) fails it after the timeout.
func TestRanksWorkerDies(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, how := range []string{"dead", "silent"} {
		b, err := NewRanks(RankOptions{Ranks: 3, MinShardBytes: 1, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		w, err := b.Upload(rankWeight(t, r, loader.Q8_0, 96, 64))
		if err != nil {
			t.Fatal(err)
		}
		e := b.peers.(*exchange)
		if how == "dead" {
			// What rank.js does when the rank's program ends or throws.
			rankJS.Call("mark", e.ctrl, e.word(2, rDead), 1)
		} else {
			e.quit(2) // rank 2 stops answering, unmarked
			if err := e.await("quit"); err != nil {
				t.Fatal(err)
			}
		}
		x, out := b.NewF32(1, 64), b.NewF32(1, 96)
		t0 := time.Now()
		b.MatMul(out, x, w, model.MatMulFusion{})
		err = b.ReadF32(out, make([]float32, 96))
		var re *RankError
		if !errors.As(err, &re) || re.Rank != 2 {
			t.Fatalf("%s: read after rank 2 ended: %v, want a RankError of rank 2", how, err)
		}
		if el := time.Since(t0); how == "dead" && el > time.Second || how == "silent" && el < 2*time.Second {
			t.Errorf("%s: the failure took %v (timeout 2s)", how, el)
		}
		t.Logf("%s: %v", how, err)
		b.Close()
	}
}

// BenchmarkRanksMatMul times a decode GEMV (T=1) and a prefill block
// (T=16) of a q4 weight of 32768×2048 (an lm_head's share) on 1, 2 and 3
// ranks: the exchange's cost against the rows it shares out.
func BenchmarkRanksMatMul(bm *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	const N, K = 32768, 2048
	wf := make([]float32, N*K)
	for i := range wf {
		wf[i] = float32(r.NormFloat64())
	}
	var lw *loader.Tensor
	for _, ranks := range []int{1, 2, 3} {
		b, err := NewRanks(RankOptions{Ranks: ranks})
		if err != nil {
			bm.Fatal(err)
		}
		if lw == nil {
			lw = simdWeight(&testing.T{}, loader.Q4, N, K, wf)
		}
		w, err := b.Upload(lw)
		if err != nil {
			bm.Fatal(err)
		}
		for _, T := range []int{1, 16} {
			bm.Run(fmt.Sprintf("ranks=%d/T=%d", ranks, T), func(bm *testing.B) {
				x, out := b.NewF32(T, K), b.NewF32(T, N)
				dst := make([]float32, T*N)
				bm.SetBytes(int64(N * K / 2))
				for i := 0; i < bm.N; i++ {
					b.MatMul(out, x, w, model.MatMulFusion{})
					if err := b.ReadF32(out, dst); err != nil {
						bm.Fatal(err)
					}
				}
			})
		}
		b.Close()
	}
}
