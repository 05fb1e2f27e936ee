//go:build js

package gpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
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

// closeTo fails when max|got-want| exceeds tol × max|want|.
func closeTo(t testing.TB, what string, got, want []float32, tol float64) {
	t.Helper()
	var maxW, maxD float64
	worst := 0
	for i := range want {
		maxW = math.Max(maxW, math.Abs(float64(want[i])))
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		if d > maxD {
			maxD, worst = d, i
		}
	}
	if maxD > tol*math.Max(maxW, 1e-6) {
		t.Errorf("%s: index %d: got %v want %v (error %.3g of max %.3g)", what, worst, got[worst], want[worst], maxD, maxW)
	}
}

// moeCase is one MoE layer on a backend with its reference weights.
type moeCase struct {
	D, E, F, A     int
	norm           bool
	router, gu, dn model.Tensor
	rf, guf, dnf   []float32
}

func newMoECase(t testing.TB, b *Backend, r *rand.Rand, dt loader.DType, D, E, F, A int, norm bool) *moeCase {
	c := &moeCase{D: D, E: E, F: F, A: A, norm: norm}
	rw, rf := moeWeight(t, r, loader.F32, E, D)
	gw, gf := moeWeight(t, r, dt, E, 2*F, D)
	dw, df := moeWeight(t, r, dt, E, D, F)
	c.router, c.gu, c.dn = mustUpload(t, b, rw), mustUpload(t, b, gw), mustUpload(t, b, dw)
	c.rf, c.guf, c.dnf = rf, gf, df
	return c
}

// run runs the layer on x (T, D) and checks it against cpu.MoE.
func (c *moeCase) run(t testing.TB, b *Backend, what string, xv []float32) {
	t.Helper()
	T := len(xv) / c.D
	x := b.NewF32(T, c.D)
	out := b.NewF32(T, c.D)
	defer b.Free(x)
	defer b.Free(out)
	b.WriteF32(x, xv)
	b.MoE(out, x, c.router, c.gu, c.dn, c.A, c.norm)
	got := make([]float32, T*c.D)
	if err := b.ReadF32(out, got); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want := make([]float32, T*c.D)
	cpu.MoE(want, xv, c.rf, c.guf, c.dnf, T, c.D, c.E, c.F, c.A, c.norm)
	closeTo(t, what, got, want, 1e-4)
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
	b := newTestBackend(t, Options{})
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

// TestMoEDecodeReplay runs decode steps (T=1) with different inputs, hence
// different experts: after the first step the backend records no new
// program, and each step is one submit with one readback.
func TestMoEDecodeReplay(t *testing.T) {
	b := newTestBackend(t, Options{})
	r := rand.New(rand.NewPCG(22, 1))
	c := newMoECase(t, b, r, loader.Q4, 128, 128, 64, 8, true)
	x, out := b.NewF32(1, c.D), b.NewF32(1, c.D)
	got, want := make([]float32, c.D), make([]float32, c.D)
	var builds int64
	var stats Stats
	for step := 0; step < 6; step++ {
		if step == 1 {
			builds, stats = b.Stats().ProgramBuilds, b.d.Stats()
		}
		xv := randVec(r, c.D, 1)
		b.WriteF32(x, xv)
		b.MoE(out, x, c.router, c.gu, c.dn, c.A, c.norm)
		if err := b.ReadF32(out, got); err != nil {
			t.Fatal(err)
		}
		cpu.MoE(want, xv, c.rf, c.guf, c.dnf, 1, c.D, c.E, c.F, c.A, c.norm)
		closeTo(t, fmt.Sprintf("step %d", step), got, want, 1e-4)
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
		b := newTestBackend(t, Options{MaxStorageBufferBindingSize: limit})
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

// TestMoERouteTies uses a zero router: every logit ties, so the experts are
// 0..A-1 with equal weights.
func TestMoERouteTies(t *testing.T) {
	b := newTestBackend(t, Options{})
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
	b := newTestBackend(t, Options{})
	r := rand.New(rand.NewPCG(25, 1))
	c := newMoECase(t, b, r, loader.Q4, 64, 8, 32, 2, true)
	x, out := b.NewF32(2, 64), b.NewF32(2, 64)
	other := b.NewF32(2, 32)
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"topK > E", func() { b.MoE(out, x, c.router, c.gu, c.dn, 9, true) }},
		{"topK 0", func() { b.MoE(out, x, c.router, c.gu, c.dn, 0, true) }},
		{"out is x", func() { b.MoE(x, x, c.router, c.gu, c.dn, 2, true) }},
		{"x width", func() { b.MoE(other, other, c.router, c.gu, c.dn, 2, true) }},
		{"swapped", func() { b.MoE(out, x, c.router, c.dn, c.gu, 2, true) }},
		{"activation router", func() { b.MoE(out, x, x, c.gu, c.dn, 2, true) }},
	} {
		tc.call()
		err := b.ReadF32(out, make([]float32, 2*64))
		if !errors.Is(err, ErrOp) {
			t.Errorf("%s: got %v, want ErrOp", tc.name, err)
		}
	}
}
