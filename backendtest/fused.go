package backendtest

import (
	"fmt"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// The model.Fuser ops, each against its reference in package cpu; skipped
// for a backend without them.

func fuser(t *testing.T, b model.Backend) model.Fuser {
	f, ok := b.(model.Fuser)
	if !ok {
		t.Skip("the backend has no fused ops (optional)")
	}
	return f
}

func testFusedMatMul(t *testing.T, b model.Backend, o Options) {
	f := fuser(t, b)
	r := rng(20)
	// T, N, K; N even (gate_up). Large T takes the GEMM's fallback.
	shapes := [][3]int{{1, 64, 64}, {1, 258, 128}, {3, 96, 256}, {5, 130, 96}, {40, 64, 64}, {1, 1000, 512}}
	if o.Short {
		shapes = [][3]int{{1, 64, 64}, {1, 258, 128}, {3, 96, 256}, {40, 64, 64}}
	}
	types := weightTypes
	if o.Short {
		types = []loader.DType{loader.F32, loader.F16, loader.Q8, loader.Q4}
	}
	for _, dt := range types {
		for _, sh := range shapes {
			T, N, K := sh[0], sh[1], sh[2]
			for _, mode := range []struct{ norm, silu, add bool }{{true, false, false}, {false, false, true}, {true, true, false}, {false, true, false}, {true, false, true}} {
				w, wf := weight(r, dt, N, K)
				xv := randF32(r, T*K, 2)
				var nv []float32
				fu := model.MatMulFusion{Eps: 1e-5, SiluMul: mode.silu, Add: mode.add}
				if mode.norm {
					nv = randF32(r, K, 1)
					fu.Norm = upload(t, b, f32Tensor("norm", nv, K))
				}
				cols := N
				if mode.silu {
					cols = N / 2
				}
				ov := randF32(r, T*cols, 1)
				out := input(t, b, ov, T, cols)
				f.FusedMatMul(out, input(t, b, xv, T, K), upload(t, b, w), fu)
				want := append([]float32(nil), ov...)
				cpu.FusedMatMul(want, xv, wf, nv, 1e-5, mode.silu, mode.add, T, N, K)
				compare(t, fmt.Sprintf("FusedMatMul %s T=%d N=%d K=%d norm=%v silu=%v add=%v", dt, T, N, K, mode.norm, mode.silu, mode.add),
					read(t, b, out, T*cols), want, 1e-4)
			}
		}
	}
}

func testRoPEKV(t *testing.T, b model.Backend, o Options) {
	f := fuser(t, b)
	tol := o.AttentionTol
	if tol == 0 {
		tol = 1e-4
	}
	r := rng(21)
	cases := [][7]int{ // H, Hk, Dh, prior, T, qknorm, bias
		{8, 2, 16, 0, 1, 1, 0}, {4, 2, 32, 7, 1, 0, 1}, {8, 2, 64, 30, 3, 1, 0}, {4, 1, 128, 5, 6, 0, 0}, {2, 2, 8, 3, 1, 0, 0}, {32, 8, 128, 40, 1, 1, 0},
	}
	for _, neox := range []bool{false, true} {
		for _, c := range cases {
			H, Hk, Dh, prior, T, qkn, withBias := c[0], c[1], c[2], c[3], c[4], c[5] == 1, c[6] == 1
			C := (H + 2*Hk) * Dh
			S := prior + T + 2
			cache, err := b.NewKVCache(2, S, Hk, Dh)
			if err != nil {
				t.Fatal(err)
			}
			kc, vc := make([]float32, S*Hk*Dh), make([]float32, S*Hk*Dh)
			rp := &model.RoPE{Dim: Dh, NeoX: neox, InvFreq: (&model.Config{HeadDim: Dh, RopeTheta: 10000}).InvFreq()}
			var qw, kw, bias model.Tensor
			var qv, kv, bv []float32
			if qkn {
				qv, kv = randF32(r, Dh, 1), randF32(r, Dh, 1)
				qw, kw = upload(t, b, f32Tensor("q", qv, Dh)), upload(t, b, f32Tensor("k", kv, Dh))
			}
			if withBias {
				bv = randF32(r, C, 1)
				bias = upload(t, b, f32Tensor("bias", bv, C))
			}
			step := func(start, n int, check bool) {
				pos := make([]int32, n)
				for i := range pos {
					pos[i] = int32(start + i)
				}
				xv := randF32(r, n*C, 2)
				x := input(t, b, xv, n, C)
				pt := ids(t, b, pos)
				f.RoPEKV(x, pt, bias, qw, kw, H+Hk, Hk, 1e-6, rp, cache, 1)
				out := b.NewF32(n, H*Dh)
				f.AttendCached(out, x, pt, cache, 1, 0)
				cpu.RoPEKV(xv, pos, bv, qv, kv, kc, vc, n, H, Hk, Dh, 1e-6, neox, rp.InvFreq)
				want := make([]float32, n*H*Dh)
				cpu.AttendCached(want, xv, pos, kc, vc, n, H, Hk, Dh, 0)
				if check {
					what := fmt.Sprintf("neox=%v H=%d Hk=%d Dh=%d at %d T=%d qknorm=%v bias=%v", neox, H, Hk, Dh, start, n, qkn, withBias)
					compare(t, "RoPEKV qkv "+what, read(t, b, x, n*C), xv, 1e-5)
					compare(t, "RoPEKV+AttendCached "+what, read(t, b, out, n*H*Dh), want, tol)
				}
			}
			if prior > 0 {
				step(0, prior, false)
			}
			step(prior, T, true)
		}
	}
}

func testMoEAdd(t *testing.T, b model.Backend, o Options) {
	f := fuser(t, b)
	r := rng(22)
	cases := [][5]int{{1, 64, 128, 32, 8}, {5, 64, 128, 32, 8}, {3, 128, 16, 64, 4}}
	for _, dt := range []loader.DType{loader.F32, loader.Q8_0, loader.Q4} {
		for _, c := range cases {
			T, D, E, F, A := c[0], c[1], c[2], c[3], c[4]
			for _, norm := range []bool{true, false} {
				rw, rf := weight(r, loader.F32, E, D)
				gw, gf := weight(r, dt, E, 2*F, D)
				dw, df := weight(r, dt, E, D, F)
				nv := randF32(r, D, 1)
				rv := randF32(r, T*D, 2)
				res := input(t, b, rv, T, D)
				f.MoEAdd(res, upload(t, b, f32Tensor("norm", nv, D)), 1e-5, upload(t, b, rw), upload(t, b, gw), upload(t, b, dw), A, norm)
				cpu.MoEAdd(rv, nv, 1e-5, rf, gf, df, T, D, E, F, A, norm)
				compare(t, fmt.Sprintf("MoEAdd %s T=%d D=%d E=%d F=%d A=%d norm=%v", dt, T, D, E, F, A, norm), read(t, b, res, T*D), rv, 1e-4)
			}
		}
	}
}
