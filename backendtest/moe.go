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
				b.MoE(res, upload(t, b, f32Tensor("norm", nv, D)), 1e-5, upload(t, b, rw), upload(t, b, gw), upload(t, b, dw), A, norm, model.MoEFusion{})
				cpu.MoE(rv, nv, 1e-5, rf, gf, df, T, D, E, F, A, norm, nil, nil)
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
			b.MoE(res, upload(t, b, f32Tensor("norm", nv, D)), 1e-6, upload(t, b, rw), upload(t, b, gw), upload(t, b, dw), A, true, model.MoEFusion{Shared: sh})
			cpu.MoE(rv, nv, 1e-6, rf, gf, df, T, D, E, F, A, true, &cpu.Shared{GateUp: sgf, Down: sdf, Gate: gv, F: Fs}, nil)
			compare(t, fmt.Sprintf("MoE shared %s T=%d D=%d E=%d F=%d A=%d Fs=%d", dt, T, D, E, F, A, Fs), read(t, b, res, T*D), rv, 1e-4)
		}
	}
}

// testMoEGemma runs Gemma 4's MoE (26B-A4B): GeGLU experts, the router's
// own input weight, per-expert output scales, the sum post-normed and
// added to another tensor (res only read), then AddNorm's norm of that
// tensor into res, as GemmaMoE.mix does.
func testMoEGemma(t *testing.T, b model.Backend, o Options) {
	r := rng(25)
	cases := [][5]int{{1, 64, 8, 32, 2}, {6, 64, 8, 32, 2}, {3, 128, 16, 64, 4}} // T, D, E, F, A
	dts := []loader.DType{loader.F32, loader.Q8_0, loader.Q4_0}
	if o.Short {
		cases, dts = cases[:2], []loader.DType{loader.F32, loader.Q4_0}
	}
	for _, dt := range dts {
		for _, c := range cases {
			T, D, E, F, A := c[0], c[1], c[2], c[3], c[4]
			rw, rf := weight(r, loader.F32, E, D)
			gw, gf := weight(r, dt, E, 2*F, D)
			dw, df := weight(r, dt, E, D, F)
			nv, rn, pn, fn := randF32(r, D, 1), randF32(r, D, 0.2), randF32(r, D, 1), randF32(r, D, 1)
			sv := randF32(r, E, 1)
			rv, ov := randF32(r, T*D, 2), randF32(r, T*D, 1)
			res, out := input(t, b, rv, T, D), input(t, b, ov, T, D)
			fu := model.MoEFusion{GeluMul: true, RouterNorm: upload(t, b, f32Tensor("rnorm", rn, D)),
				ExpertScale: upload(t, b, f32Tensor("escale", sv, E)), PostNorm: upload(t, b, f32Tensor("pnorm", pn, D)), Out: out}
			b.MoE(res, upload(t, b, f32Tensor("norm", nv, D)), 1e-6, upload(t, b, rw), upload(t, b, gw), upload(t, b, dw), A, true, fu)
			cpu.MoE(rv, nv, 1e-6, rf, gf, df, T, D, E, F, A, true, nil, &cpu.MoEOptions{Gelu: true, RouterNorm: rn, ExpertScale: sv, PostNorm: pn, Out: ov})
			name := fmt.Sprintf("MoE Gemma %s T=%d D=%d E=%d F=%d A=%d", dt, T, D, E, F, A)
			compare(t, name+" out", read(t, b, out, T*D), ov, 1e-4)
			compare(t, name+" res unchanged", read(t, b, res, T*D), rv, 0)
			b.AddNorm(res, out, upload(t, b, f32Tensor("fnorm", fn, D)), 1e-6)
			cpu.AddNorm(rv, ov, fn, 1e-6)
			compare(t, name+" AddNorm", read(t, b, res, T*D), rv, 1e-4)
		}
	}
}

// testAddNorm runs AddNorm, out += RMSNorm(x)·w, on rows of a few widths.
func testAddNorm(t *testing.T, b model.Backend) {
	r := rng(26)
	for _, c := range [][2]int{{1, 64}, {5, 128}, {3, 2816}} { // T, D
		T, D := c[0], c[1]
		xv, ov, wv := randF32(r, T*D, 3), randF32(r, T*D, 1), randF32(r, D, 1)
		out := input(t, b, ov, T, D)
		b.AddNorm(out, input(t, b, xv, T, D), upload(t, b, f32Tensor("w", wv, D)), 1e-6)
		cpu.AddNorm(ov, xv, wv, 1e-6)
		compare(t, fmt.Sprintf("AddNorm T=%d D=%d", T, D), read(t, b, out, T*D), ov, 1e-5)
	}
}
