package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"wasmllm/model"
)

// TestDeltaNetChunkedEqualsDecode: a prefill of T tokens in one op (64-token
// chunks in the WY form, then a remainder) gives the outputs and the states
// of T one-token decode steps (the recurrence).
func TestDeltaNetChunkedEqualsDecode(tt *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	rnd := func(n int, s float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = (r.Float32()*2 - 1) * s
		}
		return v
	}
	b := New(2)
	f32 := func(v []float32, shape ...int) model.Tensor {
		x := b.NewF32(shape...)
		b.WriteF32(x, v)
		return x
	}
	for _, sp := range []model.DeltaNetSpec{{KeyHeads: 2, ValueHeads: 4, HeadDim: 32, ConvKernel: 4}, {KeyHeads: 1, ValueHeads: 3, HeadDim: 16, ConvKernel: 2}} {
		const T = 150
		nv, S, K, cd, W := sp.ValueHeads, sp.HeadDim, sp.ConvKernel, sp.ConvDim(), sp.ProjWidth()
		a := make([]float32, nv)
		for j := range a {
			a[j] = -float32(math.Exp(-8 + 7*r.Float64())) // decays 0.5 .. 0.9997
		}
		convW, dt, norm := f32(rnd(cd*K, 0.8), cd, K), f32(rnd(nv, 0.5), nv), f32(rnd(S, 1), S)
		at := f32(a, nv)
		proj := rnd(T*W, 1.5)
		// one op
		cs1, st1 := b.NewF32(K-1, cd), b.NewF32(nv*S, S)
		out1 := b.NewF32(T, nv*S)
		b.DeltaNet(out1, f32(proj, T, W), convW, at, dt, norm, cs1, st1, sp, 1e-6)
		// token by token
		cs2, st2 := b.NewF32(K-1, cd), b.NewF32(nv*S, S)
		one := b.NewF32(1, nv*S)
		var want []float32
		for tk := range T {
			b.DeltaNet(one, f32(proj[tk*W:(tk+1)*W], 1, W), convW, at, dt, norm, cs2, st2, sp, 1e-6)
			want = append(want, t(one).f...)
		}
		check := func(what string, got, want []float32, tol float64) {
			var maxW, maxD float64
			for i := range want {
				maxW = math.Max(maxW, math.Abs(float64(want[i])))
				maxD = math.Max(maxD, math.Abs(float64(got[i]-want[i])))
			}
			if maxD > tol*maxW {
				tt.Errorf("%v %s: max diff %.3g of max %.3g", sp, what, maxD, maxW)
			}
			tt.Logf("%v %s: relative diff %.3g", sp, what, maxD/maxW)
		}
		check("out", t(out1).f, want, 1e-4)
		check("state", t(st1).f, t(st2).f, 1e-4)
		check("conv state", t(cs1).f, t(cs2).f, 0)
	}
}
