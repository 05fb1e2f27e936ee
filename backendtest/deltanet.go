package backendtest

import (
	"fmt"
	"math"
	"testing"

	"wasmllm/cpu"
	"wasmllm/model"
)

// testDeltaNet runs the Gated DeltaNet op on seeded inputs from nonzero
// states, batch after batch (one token, a few, one chunk of 64, chunks
// and a remainder), against the token-by-token reference: the output, the
// conv state and the recurrent state after each batch.
func testDeltaNet(t *testing.T, b model.Backend, o Options) {
	r := rng(13)
	shapes := []model.DeltaNetSpec{ // n_k, n_v, S, K
		{KeyHeads: 2, ValueHeads: 4, HeadDim: 32, ConvKernel: 4},
		{KeyHeads: 1, ValueHeads: 1, HeadDim: 16, ConvKernel: 4},
		{KeyHeads: 2, ValueHeads: 6, HeadDim: 8, ConvKernel: 3},
		{KeyHeads: 4, ValueHeads: 8, HeadDim: 64, ConvKernel: 4},
		{KeyHeads: 1, ValueHeads: 2, HeadDim: 128, ConvKernel: 2},
		{KeyHeads: 1, ValueHeads: 1, HeadDim: 256, ConvKernel: 4}, // the widest head WebGPU takes
		{KeyHeads: 1, ValueHeads: 2, HeadDim: 48, ConvKernel: 4},  // not a power of two
	}
	batches := []int{1, 5, 2, 64, 1, 130, 1}
	if o.Short {
		shapes, batches = shapes[:3], []int{1, 5, 70, 1}
	}
	for _, sp := range shapes {
		nv, S, K, cd, W := sp.ValueHeads, sp.HeadDim, sp.ConvKernel, sp.ConvDim(), sp.ProjWidth()
		convW, dtBias, norm := randF32(r, cd*K, 0.8), randF32(r, nv, 0.5), randF32(r, S, 0.2)
		for i := range norm {
			norm[i] += 1
		}
		a := make([]float32, nv) // decays from about 0.5 to 0.9998 a token
		for j := range a {
			a[j] = -float32(math.Exp(math.Log(0.0005) + (math.Log(0.5)-math.Log(0.0005))*float64(r.Float32())))
		}
		convState, state := randF32(r, (K-1)*cd, 1), randF32(r, nv*S*S, 0.1)
		cs, st := input(t, b, convState, K-1, cd), input(t, b, state, nv*S, S)
		up := func(name string, v []float32, shape ...int) model.Tensor {
			return upload(t, b, f32Tensor(name, v, shape...))
		}
		cw, at, dt, nt := up("conv", convW, cd, K), up("a", a, nv), up("dt", dtBias, nv), up("norm", norm, S)
		for _, T := range batches {
			pv := randF32(r, T*W, 1.5)
			out := b.NewF32(T, nv*S)
			b.DeltaNet(out, input(t, b, pv, T, W), cw, at, dt, nt, cs, st, sp, 1e-6)
			want := make([]float32, T*nv*S)
			cpu.DeltaNet(want, pv, convW, a, dtBias, norm, convState, state, T, sp.KeyHeads, nv, S, K, 1e-6)
			what := fmt.Sprintf("DeltaNet n_k=%d n_v=%d S=%d K=%d T=%d", sp.KeyHeads, nv, S, K, T)
			compare(t, what+" out", read(t, b, out, len(want)), want, 2e-4)
			compare(t, what+" conv state", read(t, b, cs, len(convState)), convState, 1e-6)
			compare(t, what+" state", read(t, b, st, len(state)), state, 2e-4)
			b.Free(out)
		}
	}
}
