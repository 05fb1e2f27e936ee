package backendtest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// gemmaFusions are the MatMul forms Gemma's Forward adds: GeGLU's
// gate_up (norm + GeluMul), o_proj and down with the sandwich post-norm
// and the add, the soft-capped LM head (with the final norm, and without
// it after ForwardHidden's rows); and GeluMul, PostNorm and SoftCap
// together.
var gemmaFusions = []struct {
	norm, gelu, post, add bool
	softCap               float32
}{
	{norm: true, gelu: true},
	{post: true, add: true},
	{norm: true, softCap: 30},
	{softCap: 2},
	{gelu: true, post: true, add: true},
	{norm: true, gelu: true, post: true, softCap: 5},
}

func testGemmaMatMul(t *testing.T, b model.Backend, o Options) {
	r := rng(21)
	shapes := [][3]int{{1, 64, 64}, {1, 258, 128}, {3, 96, 256}, {5, 130, 96}, {40, 64, 64}, {1, 1000, 512}}
	types := weightTypes
	if o.Short {
		shapes = [][3]int{{1, 64, 64}, {3, 96, 256}, {40, 64, 64}}
		types = []loader.DType{loader.F32, loader.Q8, loader.Q4}
	}
	for _, f := range gemmaFusions {
		for _, dt := range types {
			for _, sh := range shapes {
				gemmaMatMulCase(t, b, r, dt, sh, f.norm, f.gelu, f.post, f.add, f.softCap)
			}
		}
	}
	// K-quants through the same epilogues.
	for _, f := range gemmaFusions[:2] {
		gemmaMatMulCase(t, b, r, loader.Q4_K, [3]int{3, 96, 256}, f.norm, f.gelu, f.post, f.add, f.softCap)
	}
}

// gemmaMatMulCase is matMulCase with Gemma's epilogues: GeluMul, the
// post-norm (with its own random weight) and the soft-cap.
func gemmaMatMulCase(t *testing.T, b model.Backend, r *rand.Rand, dt loader.DType, sh [3]int, norm, gelu, post, add bool, softCap float32) {
	t.Helper()
	T, N, K := sh[0], sh[1], sh[2]
	w, wf := weight(r, dt, N, K)
	xv := randF32(r, T*K, 2)
	fu := model.MatMulFusion{Eps: 1e-6, GeluMul: gelu, Add: add, SoftCap: softCap}
	ref := cpu.Fusion{Eps: 1e-6, GeluMul: gelu, Add: add, SoftCap: softCap}
	if norm {
		ref.Norm = randF32(r, K, 1)
		fu.Norm = upload(t, b, f32Tensor("norm", ref.Norm, K))
	}
	cols := N
	if gelu {
		cols = N / 2
	}
	if post {
		ref.PostNorm = randF32(r, cols, 1.5)
		fu.PostNorm = upload(t, b, f32Tensor("post_norm", ref.PostNorm, cols))
	}
	ov := randF32(r, T*cols, 1)
	out := input(t, b, ov, T, cols)
	b.MatMul(out, input(t, b, xv, T, K), upload(t, b, w), fu)
	want := append([]float32(nil), ov...)
	cpu.MatMul(want, xv, wf, T, N, K, ref)
	compare(t, fmt.Sprintf("MatMul %s T=%d N=%d K=%d norm=%v gelu=%v post=%v add=%v softcap=%v", dt, T, N, K, norm, gelu, post, add, softCap),
		read(t, b, out, T*cols), want, 1e-4)
}

func testScale(t *testing.T, b model.Backend) {
	r := rng(22)
	for _, sh := range [][2]int{{1, 64}, {7, 640}, {3, 1153}} {
		xv := randF32(r, sh[0]*sh[1], 3)
		x := input(t, b, xv, sh[0], sh[1])
		b.Scale(x, 25.29822)
		want := append([]float32(nil), xv...)
		cpu.Scale(want, 25.29822)
		compare(t, fmt.Sprintf("Scale T=%d D=%d", sh[0], sh[1]), read(t, b, x, len(xv)), want, 1e-6)
	}
}
