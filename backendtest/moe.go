package backendtest

import (
	"fmt"
	"slices"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

func testMoE(t *testing.T, b model.Backend, o Options) {
	r := rng(9)
	cases := [][5]int{{1, 64, 128, 32, 8}, {5, 64, 128, 32, 8}, {3, 128, 16, 64, 4}} // T, D, E, F, A
	kcases := [][5]int{{1, 256, 8, 256, 2}, {5, 256, 8, 256, 2}, {3, 512, 4, 256, 3}}
	for _, dt := range append([]loader.DType{loader.F32, loader.Q8_0, loader.Q4_0, loader.Q4}, kquantTypes...) {
		cases := cases
		if slices.Contains(kquantTypes, dt) {
			cases = kcases
		}
		for _, c := range cases {
			T, D, E, F, A := c[0], c[1], c[2], c[3], c[4]
			for _, norm := range []bool{true, false} {
				rw, rf := weight(r, loader.F32, E, D)
				gw, gf := weight(r, dt, E, 2*F, D)
				dw, df := weight(r, dt, E, D, F)
				nv := randF32(r, D, 1)
				rv := randF32(r, T*D, 2)
				res := input(t, b, rv, T, D)
				b.MoE(res, upload(t, b, f32Tensor("norm", nv, D)), 1e-5, upload(t, b, rw), upload(t, b, gw), upload(t, b, dw), A, norm, model.SharedExpert{})
				cpu.MoE(rv, nv, 1e-5, rf, gf, df, T, D, E, F, A, norm, nil)
				compare(t, fmt.Sprintf("MoE %s T=%d D=%d E=%d F=%d A=%d norm=%v", dt, T, D, E, F, A, norm), read(t, b, res, T*D), rv, 1e-4)
			}
		}
	}
}

// testMoEShared runs the MoE with Qwen3.5-MoE's shared expert: its gated
// MLP scaled by sigmoid(x·gate), on top of the routed experts.
func testMoEShared(t *testing.T, b model.Backend, o Options) {
	r := rng(12)
	cases := [][6]int{{1, 64, 8, 32, 2, 64}, {7, 128, 8, 32, 2, 64}, {3, 128, 16, 64, 4, 96}} // T, D, E, F, A, Fs
	for _, dt := range []loader.DType{loader.F32, loader.Q8_0, loader.Q4_0} {
		for _, c := range cases {
			T, D, E, F, A, Fs := c[0], c[1], c[2], c[3], c[4], c[5]
			rw, rf := weight(r, loader.F32, E, D)
			gw, gf := weight(r, dt, E, 2*F, D)
			dw, df := weight(r, dt, E, D, F)
			sgw, sgf := weight(r, dt, 2*Fs, D)
			sdw, sdf := weight(r, dt, D, Fs)
			gv := randF32(r, D, 0.5)
			nv := randF32(r, D, 1)
			rv := randF32(r, T*D, 2)
			res := input(t, b, rv, T, D)
			sh := model.SharedExpert{GateUp: upload(t, b, sgw), Down: upload(t, b, sdw), Gate: upload(t, b, f32Tensor("gate", gv, D))}
			b.MoE(res, upload(t, b, f32Tensor("norm", nv, D)), 1e-6, upload(t, b, rw), upload(t, b, gw), upload(t, b, dw), A, true, sh)
			cpu.MoE(rv, nv, 1e-6, rf, gf, df, T, D, E, F, A, true, &cpu.Shared{GateUp: sgf, Down: sdf, Gate: gv, F: Fs})
			compare(t, fmt.Sprintf("MoE shared %s T=%d D=%d E=%d F=%d A=%d Fs=%d", dt, T, D, E, F, A, Fs), read(t, b, res, T*D), rv, 1e-4)
		}
	}
}
