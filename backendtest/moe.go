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
				b.MoE(res, upload(t, b, f32Tensor("norm", nv, D)), 1e-5, upload(t, b, rw), upload(t, b, gw), upload(t, b, dw), A, norm)
				cpu.MoE(rv, nv, 1e-5, rf, gf, df, T, D, E, F, A, norm)
				compare(t, fmt.Sprintf("MoE %s T=%d D=%d E=%d F=%d A=%d norm=%v", dt, T, D, E, F, A, norm), read(t, b, res, T*D), rv, 1e-4)
			}
		}
	}
}
