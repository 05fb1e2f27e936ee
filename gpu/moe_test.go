//go:build js

package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"wasmllm/cpu"
	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/shaders"
)

// moeWeight is a random weight of type dt (F32, F16, Q8 or Q4) and its exact
// f32 values.
func moeWeight(t testing.TB, r *rand.Rand, dt loader.DType, shape ...int) (*loader.Tensor, []float32) {
	t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	f := make([]float32, n)
	for i := range f {
		f[i] = r.Float32()*2 - 1
	}
	enc := dt
	switch dt {
	case loader.Q4:
		enc = loader.Q4_0
	case loader.Q8:
		enc = loader.Q8_0
	}
	data, err := loader.Quantize(enc, f)
	if err != nil {
		t.Fatal(err)
	}
	w := &loader.Tensor{Name: fmt.Sprintf("w_%s_%v", dt, shape), DType: enc, Shape: shape, Data: data}
	if enc != dt {
		if w, err = loader.ToPlanar(w); err != nil {
			t.Fatal(err)
		}
	}
	if f, err = w.F32(); err != nil {
		t.Fatal(err)
	}
	return w, f
}

func randVec(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = (r.Float32()*2 - 1) * scale
	}
	return v
}

func mustUpload(t testing.TB, b *Backend, w *loader.Tensor) model.Tensor {
	t.Helper()
	x, err := b.Upload(w)
	if err != nil {
		t.Fatalf("upload %s: %v", w.Name, err)
	}
	return x
}

// moeCase is one MoE layer on a backend with its reference weights.
type moeCase struct {
	D, E, F, A         int
	norm               bool
	nw, router, gu, dn model.Tensor
	nv, rf, guf, dnf   []float32
	shared             model.SharedExpert // none unless withShared
	sharedf            *cpu.Shared
}

// withShared gives the layer a shared expert of Fs rows (Qwen3.5-MoE).
func (c *moeCase) withShared(t testing.TB, b *Backend, r *rand.Rand, dt loader.DType, Fs int) *moeCase {
	gw, gf := moeWeight(t, r, dt, 2*Fs, c.D)
	dw, df := moeWeight(t, r, dt, c.D, Fs)
	sw, sf := moeWeight(t, r, loader.F32, c.D)
	c.shared = model.SharedExpert{GateUp: mustUpload(t, b, gw), Down: mustUpload(t, b, dw), Gate: mustUpload(t, b, sw)}
	c.sharedf = &cpu.Shared{GateUp: gf, Down: df, Gate: sf, F: Fs}
	return c
}

func newMoECase(t testing.TB, b *Backend, r *rand.Rand, dt loader.DType, D, E, F, A int, norm bool) *moeCase {
	c := &moeCase{D: D, E: E, F: F, A: A, norm: norm}
	rw, rf := moeWeight(t, r, loader.F32, E, D)
	gw, gf := moeWeight(t, r, dt, E, 2*F, D)
	dw, df := moeWeight(t, r, dt, E, D, F)
	c.router, c.gu, c.dn = mustUpload(t, b, rw), mustUpload(t, b, gw), mustUpload(t, b, dw)
	c.rf, c.guf, c.dnf = rf, gf, df
	nw, nv := moeWeight(t, r, loader.F32, D)
	c.nw, c.nv = mustUpload(t, b, nw), nv
	return c
}

// step runs the layer on a residual stream res holding xv (T, D) and
// returns the experts' sums the GPU added and cpu.MoE's.
func (c *moeCase) step(t testing.TB, b *Backend, res model.Tensor, xv []float32) (got, want []float32) {
	t.Helper()
	T := len(xv) / c.D
	b.WriteF32(res, xv)
	b.MoE(res, c.nw, 1e-5, c.router, c.gu, c.dn, c.A, c.norm, model.MoEFusion{Shared: c.shared})
	got = make([]float32, T*c.D)
	if err := b.ReadF32(res, got); err != nil {
		t.Fatal(err)
	}
	want = append([]float32(nil), xv...)
	cpu.MoE(want, c.nv, 1e-5, c.rf, c.guf, c.dnf, T, c.D, c.E, c.F, c.A, c.norm, c.sharedf, nil)
	return minus(got, xv), minus(want, xv)
}

// minus is a - b, element by element.
func minus(a, b []float32) []float32 {
	d := make([]float32, len(a))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	return d
}

// run runs the layer on x (T, D) and checks it against cpu.MoE.
func (c *moeCase) run(t testing.TB, b *Backend, what string, xv []float32) {
	t.Helper()
	res := b.NewF32(len(xv)/c.D, c.D)
	defer b.Free(res)
	got, want := c.step(t, b, res, xv)
	checkClose(t, what, got, want, 1e-4)
}

// moePaths are the settings of moeState that force each path.
var moePaths = []struct {
	name               string
	decodeMaxT, chunkT int
}{
	{"default", 0, 0},
	{"decode", 1 << 20, 0},
	{"tiled", -1, 0},
	{"tiled-chunk7", -1, 7},
	{"decode-chunk2", 1 << 20, 2},
}

// TestMoEPaths runs the per-token decode path and the expert-grouped tiled
// path, whole and in chunks, against cpu.MoE. The conformance suite covers
// the other weight types on the default paths.
func TestMoEPaths(t *testing.T) {
	for _, c := range []struct {
		file, name string
		want       int
	}{{"moe_gemv.wgsl", "MAXR", moeGemvMaxRows}, {"moe_gemm.wgsl", "RT", moeTileRows}, {"moe_gemm.wgsl", "TT", moeTileT}, {"moe_route.wgsl", "MAX_A", moeMaxA}} {
		if got := wgslConst(t, c.file, c.name); got != c.want {
			t.Fatalf("%s: %s = %d; the backend assumes %d", c.file, c.name, got, c.want)
		}
	}
	b := newTestBackend(t, webgpu.Options{})
	r := rand.New(rand.NewPCG(21, 1))
	for _, dt := range []loader.DType{loader.F16, loader.Q4} {
		c := newMoECase(t, b, r, dt, 64, 128, 32, 8, dt == loader.Q4)
		for _, T := range []int{1, 5, 33} {
			xv := randVec(r, T*c.D, 1)
			for _, p := range moePaths {
				b.ops.moe.decodeMaxT, b.ops.moe.chunkT = p.decodeMaxT, p.chunkT
				c.run(t, b, fmt.Sprintf("%s T=%d %s", dt, T, p.name), xv)
			}
		}
	}
	// a wider layer with fewer experts, F not a multiple of the tiles
	c := newMoECase(t, b, r, loader.Q4, 256, 16, 96, 4, true)
	for _, p := range moePaths {
		b.ops.moe.decodeMaxT, b.ops.moe.chunkT = p.decodeMaxT, p.chunkT
		c.run(t, b, "Q4 D=256 E=16 F=96 A=4 T=9 "+p.name, randVec(r, 9*c.D, 1))
	}
	b.ops.moe.decodeMaxT, b.ops.moe.chunkT = 0, 0
}

// TestMoESharedPaths runs Qwen3.5-MoE's shared expert on every MoE path
// (per token, tiled, in chunks) against cpu.MoE: on a CPU adapter the
// conformance suite reaches the per-token path only.
func TestMoESharedPaths(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	r := rand.New(rand.NewPCG(24, 1))
	for _, dt := range []loader.DType{loader.F32, loader.Q4} {
		c := newMoECase(t, b, r, dt, 128, 8, 32, 2, true).withShared(t, b, r, dt, 64)
		for _, T := range []int{1, 5, 33} {
			xv := randVec(r, T*c.D, 1)
			for _, p := range moePaths {
				b.ops.moe.decodeMaxT, b.ops.moe.chunkT = p.decodeMaxT, p.chunkT
				c.run(t, b, fmt.Sprintf("%s shared T=%d %s", dt, T, p.name), xv)
			}
		}
	}
	b.ops.moe.decodeMaxT, b.ops.moe.chunkT = 0, 0
}

// TestMoEGemmaPaths runs Gemma 4's MoE (GeGLU experts, the router's own
// input weight, per-expert scales, the sum post-normed into another
// tensor) on every MoE path (per token, tiled, in chunks; Q4_K's own
// kernels) against cpu.MoE: on a CPU adapter the conformance suite
// reaches the per-token path only.
func TestMoEGemmaPaths(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	r := rand.New(rand.NewPCG(25, 1))
	for _, dt := range []loader.DType{loader.F32, loader.Q4, loader.Q4_K} {
		D, F := 64, 32
		if dt == loader.Q4_K {
			D, F = 256, 256
		}
		var c *moeCase
		if dt == loader.Q4_K { // ggml's blocks: moe_kquant's gate_up
			c = &moeCase{D: D, E: 8, F: F, A: 2, norm: true}
			rtw, rf := moeWeight(t, r, loader.F32, 8, D)
			gw, gf := kquantTensor(t, r, dt, 8*2*F, D)
			dw, df := kquantTensor(t, r, dt, 8*D, F)
			gw.Shape, dw.Shape = []int{8, 2 * F, D}, []int{8, D, F}
			nw, nv := moeWeight(t, r, loader.F32, D)
			c.router, c.gu, c.dn, c.nw = mustUpload(t, b, rtw), mustUpload(t, b, gw), mustUpload(t, b, dw), mustUpload(t, b, nw)
			c.rf, c.guf, c.dnf, c.nv = rf, gf, df, nv
		} else {
			c = newMoECase(t, b, r, dt, D, 8, F, 2, true)
		}
		rw, rv := moeWeight(t, r, loader.F32, D)
		sw, sv := moeWeight(t, r, loader.F32, 8)
		pw, pv := moeWeight(t, r, loader.F32, D)
		fu := model.MoEFusion{GeluMul: true, RouterNorm: mustUpload(t, b, rw), ExpertScale: mustUpload(t, b, sw), PostNorm: mustUpload(t, b, pw)}
		for _, T := range []int{1, 5, 33} {
			xv, ov := randVec(r, T*D, 1), randVec(r, T*D, 1)
			for _, p := range moePaths {
				b.ops.moe.decodeMaxT, b.ops.moe.chunkT = p.decodeMaxT, p.chunkT
				res, out := b.NewF32(T, D), b.NewF32(T, D)
				b.WriteF32(res, xv)
				b.WriteF32(out, ov)
				f := fu
				f.Out = out
				b.MoE(res, c.nw, 1e-6, c.router, c.gu, c.dn, c.A, true, f)
				got := make([]float32, T*D)
				if err := b.ReadF32(out, got); err != nil {
					t.Fatal(err)
				}
				want := append([]float32(nil), ov...)
				cpu.MoE(append([]float32(nil), xv...), c.nv, 1e-6, c.rf, c.guf, c.dnf, T, D, 8, F, 2, true, nil,
					&cpu.MoEOptions{Gelu: true, RouterNorm: rv, ExpertScale: sv, PostNorm: pv, Out: want})
				checkClose(t, fmt.Sprintf("%s gemma T=%d %s", dt, T, p.name), got, want, 1e-4)
				b.Free(res)
				b.Free(out)
			}
		}
	}
	b.ops.moe.decodeMaxT, b.ops.moe.chunkT = 0, 0
}

// TestMoEDecodeReplay runs decode steps (T=1) with different inputs, hence
// different experts: after the first step the backend records no new
// program, and each step is one submit with one readback.
func TestMoEDecodeReplay(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	r := rand.New(rand.NewPCG(22, 1))
	c := newMoECase(t, b, r, loader.Q4, 128, 128, 64, 8, true)
	res := b.NewF32(1, c.D)
	var builds int64
	var stats webgpu.Stats
	for step := 0; step < 6; step++ {
		if step == 1 {
			builds, stats = b.Stats().ProgramBuilds, b.d.Stats()
		}
		got, want := c.step(t, b, res, randVec(r, c.D, 1))
		checkClose(t, fmt.Sprintf("step %d", step), got, want, 1e-4)
	}
	if n := b.Stats().ProgramBuilds - builds; n != 0 {
		t.Errorf("%d programs recorded after the first step, want 0", n)
	}
	s := b.d.Stats().Sub(stats)
	if s.Submits != 5 || s.Maps != 5 || s.BytesRead != int64(5*4*c.D) {
		t.Errorf("5 steps: %d submits, %d maps, %d bytes read; want 5, 5, %d", s.Submits, s.Maps, s.BytesRead, 5*4*c.D)
	}
}

// TestMoESplitExperts lowers the binding limit so that the expert tensors are
// split into parts on expert boundaries (and the token chunks shrink to fit
// the scratch buffers), then runs both paths.
func TestMoESplitExperts(t *testing.T) {
	for _, dt := range []loader.DType{loader.F32, loader.Q4} {
		D, E, F, A := 128, 16, 32, 4
		rowBytes, _ := weightRowBytes(dt, D)
		limit := uint64(5 * 2 * F * rowBytes) // five experts of gate_up
		b := newTestBackend(t, webgpu.Options{MaxStorageBufferBindingSize: limit})
		r := rand.New(rand.NewPCG(23, 1))
		c := newMoECase(t, b, r, dt, D, E, F, A, true)
		gp, dp := len(tt(c.gu).parts), len(tt(c.dn).parts)
		if gp < 2 || dp < 2 {
			t.Fatalf("%s: gate_up in %d parts, down in %d: the limit %d did not split them", dt, gp, dp, limit)
		}
		for _, T := range []int{1, 3, 33} {
			xv := randVec(r, T*D, 1)
			for _, p := range moePaths[:3] {
				b.ops.moe.decodeMaxT, b.ops.moe.chunkT = p.decodeMaxT, p.chunkT
				c.run(t, b, fmt.Sprintf("%s split %d+%d parts T=%d %s", dt, gp, dp, T, p.name), xv)
			}
		}
	}
}

// TestMoEGemvShapes runs the decode path (moe_gemv) for every expert dtype
// with the GPU's and the CPU adapter's workgroup shapes, with and without
// subgroups, the expert tensors split into parts; the router is q8 so that
// its GEMV widens bytes.
func TestMoEGemvShapes(t *testing.T) {
	for _, sub := range []bool{true, false} {
		name, opts := "subgroups", webgpu.Options{}
		if !sub {
			name, opts = "nosubgroups", webgpu.Options{DisableFeatures: []string{"subgroups"}}
		}
		t.Run(name, func(t *testing.T) {
			for _, dt := range []loader.DType{loader.F32, loader.F16, loader.Q8, loader.Q4} {
				D, E, F, A := 128, 16, 96, 4
				rowBytes, _ := weightRowBytes(dt, D)
				opts.MaxStorageBufferBindingSize = uint64(5 * 2 * F * rowBytes) // five experts of gate_up
				b := newTestBackend(t, opts)
				if !sub && b.d.Features.Subgroups {
					t.Fatal("subgroups were not disabled")
				}
				r := rand.New(rand.NewPCG(26, 1))
				c := newMoECase(t, b, r, dt, D, E, F, A, true)
				rw, rf := moeWeight(t, r, loader.Q8, E, D)
				c.router, c.rf = mustUpload(t, b, rw), rf
				if gp, dp := len(tt(c.gu).parts), len(tt(c.dn).parts); gp < 2 || dp < 2 {
					t.Fatalf("%s: gate_up in %d parts, down in %d: not split", dt, gp, dp)
				}
				b.ops.moe.decodeMaxT = 1 << 20
				for _, cpu := range []bool{false, true} { // the GPU's shapes, then a CPU adapter's
					b.tune.cpu = cpu
					for _, T := range []int{1, 4} {
						c.run(t, b, fmt.Sprintf("%s %s cpu shapes %v T=%d", name, dt, cpu, T), randVec(r, T*D, 1))
					}
				}
			}
		})
	}
}

// TestMoERouteTies uses a zero router: every logit ties, so the experts are
// 0..A-1 with equal weights.
func TestMoERouteTies(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	r := rand.New(rand.NewPCG(24, 1))
	D, E, F, A := 64, 32, 32, 4
	c := newMoECase(t, b, r, loader.Q8, D, E, F, A, false)
	zero := make([]float32, E*D)
	data, _ := loader.Quantize(loader.F32, zero)
	c.router = mustUpload(t, b, &loader.Tensor{Name: "router0", DType: loader.F32, Shape: []int{E, D}, Data: data})
	c.rf = zero
	for _, p := range moePaths[1:3] {
		b.ops.moe.decodeMaxT = p.decodeMaxT
		c.run(t, b, "ties "+p.name, randVec(r, 6*D, 1))
	}
	b.ops.moe.decodeMaxT = 0
}

// TestMoEErrors checks that bad calls fail the next Read with ErrOp.
func TestMoEErrors(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	r := rand.New(rand.NewPCG(25, 1))
	c := newMoECase(t, b, r, loader.Q4, 64, 8, 32, 2, true)
	out := b.NewF32(2, 64)
	other, otherNorm := b.NewF32(2, 32), mustUpload(t, b, &loader.Tensor{Name: "norm32", DType: loader.F32, Shape: []int{32}, Data: make([]byte, 4*32)})
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"topK > E", func() { b.MoE(out, c.nw, 1e-5, c.router, c.gu, c.dn, 9, true, model.MoEFusion{}) }},
		{"topK 0", func() { b.MoE(out, c.nw, 1e-5, c.router, c.gu, c.dn, 0, true, model.MoEFusion{}) }},
		{"norm width", func() { b.MoE(out, otherNorm, 1e-5, c.router, c.gu, c.dn, 2, true, model.MoEFusion{}) }},
		{"activation norm", func() { b.MoE(out, out, 1e-5, c.router, c.gu, c.dn, 2, true, model.MoEFusion{}) }},
		{"res width", func() { b.MoE(other, otherNorm, 1e-5, c.router, c.gu, c.dn, 2, true, model.MoEFusion{}) }},
		{"swapped", func() { b.MoE(out, c.nw, 1e-5, c.router, c.dn, c.gu, 2, true, model.MoEFusion{}) }},
		{"activation router", func() { b.MoE(out, c.nw, 1e-5, out, c.gu, c.dn, 2, true, model.MoEFusion{}) }},
	} {
		tc.call()
		err := b.ReadF32(out, make([]float32, 2*64))
		if !errors.Is(err, ErrOp) {
			t.Errorf("%s: got %v, want ErrOp", tc.name, err)
		}
	}
}

// selectCase runs Argmax and TopK on one logits matrix against the cpu
// references.
func selectCase(t *testing.T, b *Backend, what string, lv []float32, T, V, k int) {
	t.Helper()
	l := b.NewF32(T, V)
	am, ids, vals := b.NewI32(T), b.NewI32(T, k), b.NewF32(T, k)
	defer func() {
		for _, x := range []model.Tensor{l, am, ids, vals} {
			b.Free(x)
		}
	}()
	b.WriteF32(l, lv)
	b.Argmax(am, l)
	b.TopK(ids, vals, l, k)
	gotA, gotI, gotV := make([]int32, T), make([]int32, T*k), make([]float32, T*k)
	for _, err := range []error{b.ReadI32(am, gotA), b.ReadI32(ids, gotI), b.ReadF32(vals, gotV)} {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	wantA, wantI, wantV := make([]int32, T), make([]int32, T*k), make([]float32, T*k)
	cpu.Argmax(wantA, lv, T, V)
	cpu.TopK(wantI, wantV, lv, T, V, k)
	for i := range wantA {
		if gotA[i] != wantA[i] {
			t.Errorf("%s: Argmax row %d: got %d want %d", what, i, gotA[i], wantA[i])
		}
	}
	for i := range wantI {
		if gotI[i] != wantI[i] || math.Float32bits(gotV[i]) != math.Float32bits(wantV[i]) {
			t.Errorf("%s: TopK row %d rank %d: got (%d, %v) want (%d, %v)", what, i/k, i%k, gotI[i], gotV[i], wantI[i], wantV[i])
			return
		}
	}
}

// TestSelect covers Argmax and TopK beyond the conformance suite: heavy ties
// across blocks, -inf rows, block boundaries, and k larger than a block of
// either pass.
func TestSelect(t *testing.T) {
	if wg, per, l := wgslConst(t, "topk.wgsl", "WG"), wgslConst(t, "topk.wgsl", "PER"), wgslConst(t, "topk.wgsl", "MAX_L"); wg*per != topkBlock || l != topkMaxL {
		t.Fatalf("topk.wgsl has WG %d, PER %d, MAX_L %d; the backend assumes a block of %d and %d blocks", wg, per, l, topkBlock, topkMaxL)
	}
	b := newTestBackend(t, webgpu.Options{})
	r := rand.New(rand.NewPCG(26, 1))
	// 152k logits of 7 distinct values: every rank is a tie
	V := 151936
	lv := make([]float32, 3*V)
	for i := range lv[:2*V] {
		lv[i] = float32(r.IntN(7) - 3)
	}
	for i := 2 * V; i < 3*V; i++ {
		lv[i] = float32(math.Inf(-1))
	}
	lv[2*V+100000] = float32(math.Inf(-1)) // still all -inf: the lowest index wins
	selectCase(t, b, "ties V=151936", lv, 3, V, 64)
	// the maximum just past a block boundary, and in the last short block
	for _, c := range [][2]int{{topkBlock + 1, 5}, {argmaxBlock*2 + 3, 7}, {1, 1}, {67, 67}} {
		V, k := c[0], c[1]
		lv := randVec(r, V, 10)
		lv[V-1] = 11
		selectCase(t, b, fmt.Sprintf("V=%d k=%d", V, k), lv, 1, V, k)
	}
	// k beyond a block: lists padded with missing candidates
	lv = randVec(r, 2*5000, 10)
	selectCase(t, b, "V=5000 k=3000", lv, 2, 5000, 3000)
}

// TestSelectReplay samples several steps from fresh logits: after the first
// step nothing is recorded, and each step reads back only the id and the k
// candidates.
func TestSelectReplay(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	r := rand.New(rand.NewPCG(27, 1))
	V, k := 151936, 40
	l := b.NewF32(1, V)
	am, ids, vals := b.NewI32(1), b.NewI32(1, k), b.NewF32(1, k)
	gotA, gotI, gotV := make([]int32, 1), make([]int32, k), make([]float32, k)
	wantA, wantI, wantV := make([]int32, 1), make([]int32, k), make([]float32, k)
	var builds int64
	var stats webgpu.Stats
	for step := 0; step < 4; step++ {
		if step == 1 {
			builds, stats = b.Stats().ProgramBuilds, b.d.Stats()
		}
		lv := randVec(r, V, 10)
		b.WriteF32(l, lv)
		b.Argmax(am, l)
		b.TopK(ids, vals, l, k)
		for _, err := range []error{b.ReadI32(am, gotA), b.ReadI32(ids, gotI), b.ReadF32(vals, gotV)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		cpu.Argmax(wantA, lv, 1, V)
		cpu.TopK(wantI, wantV, lv, 1, V, k)
		if gotA[0] != wantA[0] || !slices.Equal(gotI, wantI) || !slices.Equal(gotV, wantV) {
			t.Errorf("step %d: got %d %v %v, want %d %v %v", step, gotA[0], gotI, gotV, wantA[0], wantI, wantV)
		}
	}
	if n := b.Stats().ProgramBuilds - builds; n != 0 {
		t.Errorf("%d programs recorded after the first step, want 0", n)
	}
	if s := b.d.Stats().Sub(stats); s.BytesRead != int64(3*(4+8*k)) {
		t.Errorf("3 steps read back %d bytes, want %d", s.BytesRead, 3*(4+8*k))
	}
}

// wgslConst reads `const NAME: u32 = Nu;` from a shader file.
func wgslConst(t *testing.T, file, name string) int {
	t.Helper()
	src, err := shaders.Source(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const ` + name + `: u32 = (\d+)u;`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("%s: no const %s", file, name)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestSelectErrors checks that bad calls fail the next Read with ErrOp.
func TestSelectErrors(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	l := b.NewF32(2, 100)
	huge := b.NewF32(1, topkMaxV+1)
	ids, vals, am := b.NewI32(2, 8), b.NewF32(2, 8), b.NewI32(2)
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"k > V", func() { b.TopK(b.NewI32(2, 101), b.NewF32(2, 101), l, 101) }},
		{"k 0", func() { b.TopK(ids, vals, l, 0) }},
		{"ids size", func() { b.TopK(ids, vals, l, 4) }},
		{"ids f32", func() { b.TopK(vals, ids, l, 8) }},
		{"V too large", func() { b.TopK(b.NewI32(1, 8), b.NewF32(1, 8), huge, 8) }},
		{"argmax out size", func() { b.Argmax(ids, l) }},
		{"argmax i32 logits", func() { b.Argmax(am, ids) }},
	} {
		tc.call()
		if err := b.ReadI32(am, make([]int32, 2)); !errors.Is(err, ErrOp) {
			t.Errorf("%s: got %v, want ErrOp", tc.name, err)
		}
	}
}

// BenchmarkMoEQwen3A3B runs a Qwen3-30B-A3B MoE block: D=2048, E=128, A=8,
// F=768, q4 experts, f32 router. Sub-benchmark decode is one step (T=1); it
// reports the bytes of the 8 chosen experts' weights (values and scales) read
// per second as MB/s, and per step the dispatches, submits, buffer maps,
// bytes read back and programs recorded. prefill64 is a 64-token prefill
// through the expert-grouped path, reported in tokens/s.
func BenchmarkMoEQwen3A3B(b *testing.B) {
	const D, E, A, F = 2048, 128, 8, 768
	d, err := openDevice(webgpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Close)
	be, err := NewBackend(d, BackendOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(28, 1))
	q4 := func(shape ...int) *loader.Tensor {
		n := shape[0] * shape[1] * shape[2]
		size, _ := loader.Q4.Size(n)
		data := make([]byte, size)
		qb := (n/2 + 3) &^ 3
		for i := 0; i+8 <= qb; i += 8 {
			binary.LittleEndian.PutUint64(data[i:], r.Uint64())
		}
		for g := 0; g < n/32; g++ {
			binary.LittleEndian.PutUint16(data[qb+2*g:], loader.F32ToF16(0.005+0.01*r.Float32()))
		}
		return &loader.Tensor{Name: fmt.Sprintf("experts %v", shape), DType: loader.Q4, Shape: shape, Data: data}
	}
	rw, _ := moeWeight(b, r, loader.F32, E, D)
	router := mustUpload(b, be, rw)
	gu := mustUpload(b, be, q4(E, 2*F, D))
	dn := mustUpload(b, be, q4(E, D, F))
	nw, _ := moeWeight(b, r, loader.F32, D)
	norm := mustUpload(b, be, nw)
	run := func(b *testing.B, T int) {
		res := be.NewF32(T, D)
		defer be.Free(res)
		xv, got := randVec(r, T*D, 1), make([]float32, T*D)
		step := func() {
			be.WriteF32(res, xv)
			be.MoE(res, norm, 1e-5, router, gu, dn, A, true, model.MoEFusion{})
			if err := be.ReadF32(res, got); err != nil {
				b.Fatal(err)
			}
		}
		step()
		before, builds := be.d.Stats(), be.Stats().ProgramBuilds
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			xv[i%len(xv)] += 0.5 // other experts each step
			step()
		}
		b.StopTimer()
		s := be.d.Stats().Sub(before)
		n := float64(b.N)
		b.ReportMetric(float64(s.Dispatches)/n, "dispatches/op")
		b.ReportMetric(float64(s.Submits)/n, "submits/op")
		b.ReportMetric(float64(s.Maps)/n, "maps/op")
		b.ReportMetric(float64(s.BytesRead)/n, "readB/op")
		b.ReportMetric(float64(be.Stats().ProgramBuilds-builds), "builds")
		b.ReportMetric(float64(T)*n/b.Elapsed().Seconds(), "tok/s")
	}
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(A) * int64(2*F*D+D*F) * 9 / 16) // q4: 4 bits and an f16 per 32
		run(b, 1)
	})
	b.Run("prefill64", func(b *testing.B) { run(b, 64) })
}
