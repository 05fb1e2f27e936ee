package backendtest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// stackMixes are row blocks of the types llama-quantize's mixes put side
// by side in a merged projection: Q4_K_M's (Q4_K q and k, Q6_K v), the
// other K-quant mixes', a Q8_0 or Q4_0 fallback beside K-quants (as the
// planar layouts -quant keep writes, and as ggml's blocks from a GGUF),
// and F32 rows (Qwen3.5's ssm_in: its beta and alpha rows).
var stackMixes = [][]loader.DType{
	{loader.Q4_K, loader.Q6_K},
	{loader.Q3_K, loader.Q5_K},
	{loader.Q2_K, loader.Q3_K, loader.Q2_K},
	{loader.Q5_K, loader.Q6_K},
	{loader.Q4_K, loader.Q8},
	{loader.Q4, loader.Q4_K},
	{loader.Q8_0, loader.Q4_K},
	{loader.Q6_K, loader.F32},
}

// testStackedMatMul runs MatMul with a weight of row blocks in different
// types (model.RowStacker) in Forward's fused forms, decode and prefill,
// against the reference on the blocks' dequantised rows.
func testStackedMatMul(t *testing.T, b model.Backend, o Options) {
	rs, ok := b.(model.RowStacker)
	if !ok {
		t.Fatalf("%T is not a model.RowStacker", b)
	}
	r := rng(9)
	type form struct {
		norm, silu, gelu, post, add bool
	}
	forms := []form{{}, {norm: true}, {add: true}, {norm: true, silu: true}, {norm: true, gelu: true, post: true}}
	shapes := [][3]int{{1, 0, 256}, {3, 0, 512}, {40, 0, 256}}
	mixes := stackMixes
	if o.Short {
		shapes = [][3]int{{1, 0, 256}, {40, 0, 256}}
		mixes = [][]loader.DType{stackMixes[0], stackMixes[4], stackMixes[7]}
	}
	for _, mix := range mixes {
		for _, sh := range shapes {
			for _, f := range forms {
				stackedCase(t, b, rs, r, mix, sh[0], sh[2], f.norm, f.silu, f.gelu, f.post, f.add)
			}
		}
	}
}

// stackedCase is one MatMul of a stacked weight whose blocks are mix, of
// 48, 32, ... rows (N even, for gate_up), on T random rows of K.
func stackedCase(t *testing.T, b model.Backend, rs model.RowStacker, r *rand.Rand, mix []loader.DType, T, K int, norm, silu, gelu, post, add bool) {
	t.Helper()
	var parts []model.Tensor
	var wf []float32
	N := 0
	for i, dt := range mix {
		n := 48 - 16*(i%2)
		w, f := weight(r, dt, n, K)
		parts = append(parts, upload(t, b, w))
		wf = append(wf, f...)
		N += n
	}
	w, err := rs.StackRows(parts)
	if err != nil {
		t.Fatalf("StackRows %v: %v", mix, err)
	}
	defer b.Free(w)
	xv := randF32(r, T*K, 2)
	fu := model.MatMulFusion{Eps: 1e-5, SiluMul: silu, GeluMul: gelu, Add: add}
	ref := cpu.Fusion{Eps: 1e-5, SiluMul: silu, GeluMul: gelu, Add: add}
	if norm {
		ref.Norm = randF32(r, K, 1)
		fu.Norm = upload(t, b, f32Tensor("norm", ref.Norm, K))
	}
	cols := N
	if silu || gelu {
		cols = N / 2
	}
	if post {
		ref.PostNorm = randF32(r, cols, 1)
		fu.PostNorm = upload(t, b, f32Tensor("post", ref.PostNorm, cols))
	}
	ov := randF32(r, T*cols, 1)
	out := input(t, b, ov, T, cols)
	b.MatMul(out, input(t, b, xv, T, K), w, fu)
	want := append([]float32(nil), ov...)
	cpu.MatMul(want, xv, wf, T, N, K, ref)
	compare(t, fmt.Sprintf("MatMul stacked %v T=%d N=%d K=%d norm=%v silu=%v gelu=%v post=%v add=%v", mix, T, N, K, norm, silu, gelu, post, add),
		read(t, b, out, T*cols), want, 1e-4)
}
