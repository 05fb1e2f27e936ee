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
	scale                 float32 // Gemma 4's per-layer projection: 1/sqrt(D)
	group                 int     // post-norm groups: Gemma 4's per-head q/k/v norms (N/group heads)
}{
	{norm: true, gelu: true},
	{post: true, add: true},
	{norm: true, softCap: 30},
	{softCap: 2},
	{gelu: true, post: true, add: true},
	{norm: true, gelu: true, post: true, softCap: 5},
	{norm: true, post: true, group: 2},
	{post: true, add: true, scale: 0.125, group: 2},
	{scale: 3},
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
				group := 0
				if f.group > 0 { // N/f.group heads, when it divides
					if group = sh[1] / f.group; sh[1]%f.group != 0 {
						group = 0
					}
				}
				gemmaMatMulCase(t, b, r, dt, sh, f.norm, f.gelu, f.post, f.add, f.softCap, f.scale, group)
			}
		}
	}
	// K-quants through the same epilogues.
	for _, f := range gemmaFusions[:2] {
		gemmaMatMulCase(t, b, r, loader.Q4_K, [3]int{3, 96, 256}, f.norm, f.gelu, f.post, f.add, f.softCap, 0, 0)
	}
}

// gemmaMatMulCase is matMulCase with Gemma's epilogues: GeluMul, the
// post-norm (with its own random weight) and the soft-cap.
func gemmaMatMulCase(t *testing.T, b model.Backend, r *rand.Rand, dt loader.DType, sh [3]int, norm, gelu, post, add bool, softCap, scale float32, group int) {
	t.Helper()
	T, N, K := sh[0], sh[1], sh[2]
	w, wf := weight(r, dt, N, K)
	xv := randF32(r, T*K, 2)
	fu := model.MatMulFusion{Eps: 1e-6, GeluMul: gelu, Add: add, SoftCap: softCap, Scale: scale, PostNormGroup: group}
	ref := cpu.Fusion{Eps: 1e-6, GeluMul: gelu, Add: add, SoftCap: softCap, Scale: scale, PostNormGroup: group}
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
	compare(t, fmt.Sprintf("MatMul %s T=%d N=%d K=%d norm=%v gelu=%v post=%v (group %d) add=%v softcap=%v scale=%v", dt, T, N, K, norm, gelu, post, group, add, softCap, scale),
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

// testGeluGate runs Gemma 4's per-layer input gate on a slice of a wider
// row (a layer's P of the L·P per-layer inputs).
func testGeluGate(t *testing.T, b model.Backend) {
	r := rng(23)
	for _, c := range [][4]int{{1, 32, 192, 64}, {5, 32, 192, 160}, {3, 256, 256 * 35, 256 * 34}} { // T, P, C, col0
		T, P, C, col0 := c[0], c[1], c[2], c[3]
		gv, sv := randF32(r, T*P, 4), randF32(r, T*C, 2)
		out := b.NewF32(T, P)
		b.GeluGate(out, input(t, b, gv, T, P), input(t, b, sv, T, C), col0)
		want := make([]float32, T*P)
		cpu.GeluGate(want, gv, sv, T, P, C, col0)
		compare(t, fmt.Sprintf("GeluGate T=%d P=%d C=%d col0=%d", T, P, C, col0), read(t, b, out, T*P), want, 1e-5)
	}
}

// testSharedKV runs a layer that reads another layer's keys and values
// (Gemma 4): RoPEKV with no KV heads rotates rows of queries alone and
// writes nothing, and Attend reads such rows over the cache another
// RoPEKV filled, with and without a sliding window.
func testSharedKV(t *testing.T, b model.Backend, o Options) {
	tol := o.AttentionTol
	if tol == 0 {
		tol = 1e-4
	}
	r := rng(24)
	for _, c := range [][6]int{{4, 1, 32, 0, 12, 6}, {4, 1, 64, 9, 1, 0}, {8, 2, 32, 30, 5, 0}, {4, 2, 128, 100, 1, 16}} { // H, Hk, Dh, prior, T, window
		H, Hk, Dh, prior, T, window := c[0], c[1], c[2], c[3], c[4], c[5]
		k := newKVRef(t, b, H, Hk, Dh, prior+T+2, &model.RoPE{Dim: Dh, NeoX: true, InvFreq: (&model.Config{HeadDim: Dh, RopeTheta: 10000}).InvFreq()})
		k.ropeKV(t, r, positions(0, prior+T)) // the source layer's keys and values
		pos := positions(prior, T)
		qv := randF32(r, T*H*Dh, 2)
		q := input(t, b, qv, T, H*Dh)
		b.RoPEKV(q, ids(t, b, pos), nil, nil, nil, H, 0, 1e-6, k.rope, k.cache, 1)
		cpu.RoPEKV(qv, pos, nil, nil, nil, nil, nil, T, H, 0, Dh, 1e-6, true, k.rope.InvFreq, 1, false)
		what := fmt.Sprintf("H=%d Hk=%d Dh=%d at %d T=%d window=%d", H, Hk, Dh, prior, T, window)
		compare(t, "RoPEKV queries alone "+what, read(t, b, q, len(qv)), qv, 3e-6)
		out := b.NewF32(T, H*Dh)
		b.Attend(out, q, ids(t, b, pos), k.cache, 1, window, false)
		full := make([]float32, T*(H+2*Hk)*Dh) // the reference reads [q | k | v] rows; k and v unused
		for i := range T {
			copy(full[i*(H+2*Hk)*Dh:], qv[i*H*Dh:(i+1)*H*Dh])
		}
		want := make([]float32, T*H*Dh)
		cpu.Attend(want, full, pos, k.kc, k.vc, T, H, Hk, Dh, window, false)
		compare(t, "Attend queries alone "+what, read(t, b, out, len(want)), want, tol)
	}
}
