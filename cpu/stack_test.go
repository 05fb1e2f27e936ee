package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"wasmllm/loader"
	"wasmllm/model"
)

// TestStackRows: MatMul with a stacked weight (row blocks in their own
// types, as llama-quantize's mixes give a merged q/k/v) writes, bit for
// bit, each block's own product into its columns, decode and prefill, on
// every kernel set the build has (natively AVX2 and the Go loops; in the
// browser SIMD128 and the Go loops), and across ranks.
func TestStackRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	mixes := [][]loader.DType{{loader.Q4_K, loader.Q6_K}, {loader.Q3_K, loader.Q5_K, loader.Q3_K}, {loader.Q8_0, loader.Q4_K}, {loader.Q4, loader.Q6_K}, {loader.Q2_K, loader.F32}}
	const K = 512
	for _, mix := range mixes {
		var blocks []*loader.Tensor
		for i, dt := range mix {
			n := 40 + 24*i
			if kquant(dt) {
				blocks = append(blocks, kquantWeight(rng, dt, n, K))
				continue
			}
			wf := make([]float32, n*K)
			for j := range wf {
				wf[j] = float32(rng.NormFloat64())
			}
			if dt == loader.F32 {
				blocks = append(blocks, &loader.Tensor{Name: "w", DType: dt, Shape: []int{n, K}, Data: loader.F32Bytes(wf)})
				continue
			}
			blocks = append(blocks, simdWeight(t, dt, n, K, wf))
		}
		for _, T := range []int{1, 5} {
			for _, kernels := range []string{"simd", "go"} {
				for _, ranks := range []int{1, 2} {
					name := fmt.Sprintf("%v T=%d %s ranks=%d", mix, T, kernels, ranks)
					savedJS, savedNative := simd, nativeSIMD
					if kernels == "go" {
						simd, nativeSIMD = nil, false
					}
					stackedSameAsBlocks(t, name, rng, blocks, T, ranks)
					simd, nativeSIMD = savedJS, savedNative
				}
			}
		}
	}
}

// stackedSameAsBlocks multiplies T random rows by the blocks stacked and by
// each block alone, and requires the same bits in the block's columns.
func stackedSameAsBlocks(t *testing.T, name string, rng *rand.Rand, blocks []*loader.Tensor, T, ranks int) {
	t.Helper()
	var b *Backend
	if ranks > 1 {
		b = NewLocalRanks(RankOptions{Ranks: ranks, MinShardBytes: 1})
	} else {
		b = New(2)
	}
	K := blocks[0].Cols()
	var parts []model.Tensor
	N := 0
	for _, lt := range blocks {
		p, err := b.Upload(lt)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
		N += lt.Rows()
	}
	w, err := b.StackRows(parts)
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float32, T*K)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	x := b.NewF32(T, K)
	b.WriteF32(x, xs)
	out := b.NewF32(T, N)
	b.MatMul(out, x, w, model.MatMulFusion{})
	got := make([]float32, T*N)
	if err := b.ReadF32(out, got); err != nil {
		t.Fatal(err)
	}
	off := 0
	for k, p := range parts {
		n := blocks[k].Rows()
		o := b.NewF32(T, n)
		b.MatMul(o, x, p, model.MatMulFusion{})
		want := make([]float32, T*n)
		if err := b.ReadF32(o, want); err != nil {
			t.Fatal(err)
		}
		for r := range T {
			for c := range n {
				if g, w := got[r*N+off+c], want[r*n+c]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("%s: block %d (%s) token %d row %d: stacked %v, alone %v", name, k, blocks[k].DType, r, c, g, w)
				}
			}
		}
		off += n
	}
	b.Free(w)
}
