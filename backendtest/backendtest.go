// Package backendtest is the conformance suite every model.Backend passes:
// each op runs on seeded random inputs of several shapes, awkward ones
// included, and is compared with the plain-loop reference of the same name
// in package cpu. Failures print the op, the shape, the index, got and want.
package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"wasmllm/loader"
	"wasmllm/model"
)

// Options adjusts the suite to a backend.
type Options struct {
	// AttentionTol is the relative tolerance for Attend; a backend that
	// keeps the KV cache in f16 needs about 1e-2. Zero means 1e-4.
	AttentionTol float64
	// Short runs fewer and smaller shapes (slow software GPUs).
	Short bool
	// AllKVHeadDims: the backend's q8 KV caches take every head dim (the
	// CPU's); without it a q8 cache of heads not a multiple of 16 may be
	// refused (WebGPU reads q8 in units of 16 values).
	AllKVHeadDims bool
	// Only, when set, runs just the ops named in it (comma-separated).
	Only string
}

// Run runs every op of b (the ops Forward calls, and the sampling ops)
// against the reference.
func Run(t *testing.T, b model.Backend, o Options) {
	ops := []struct {
		name string
		run  func(*testing.T)
	}{
		{"Embed", func(t *testing.T) { testEmbed(t, b) }},
		{"MatMul", func(t *testing.T) { testMatMul(t, b, o) }},
		{"RoPEKV", func(t *testing.T) { testRoPEKV(t, b, o) }},
		{"Attend", func(t *testing.T) { testAttend(t, b, o) }},
		{"TypedKV", func(t *testing.T) { testTypedKV(t, b, o) }},
		{"MoE", func(t *testing.T) { testMoE(t, b, o) }},
		{"GatedAttention", func(t *testing.T) { testGatedAttention(t, b, o) }},
		{"LongRoPE", func(t *testing.T) { testLongRoPE(t, b, o) }},
		{"MoEShared", func(t *testing.T) { testMoEShared(t, b, o) }},
		{"MoEGemma", func(t *testing.T) { testMoEGemma(t, b, o) }},
		{"AddNorm", func(t *testing.T) { testAddNorm(t, b) }},
		{"DeltaNet", func(t *testing.T) { testDeltaNet(t, b, o) }},
		{"GemmaMatMul", func(t *testing.T) { testGemmaMatMul(t, b, o) }},
		{"StackedMatMul", func(t *testing.T) { testStackedMatMul(t, b, o) }},
		{"Scale", func(t *testing.T) { testScale(t, b) }},
		{"GeluGate", func(t *testing.T) { testGeluGate(t, b) }},
		{"SharedKV", func(t *testing.T) { testSharedKV(t, b, o) }},
		{"CopyRows", func(t *testing.T) { testCopyRows(t, b) }},
		{"Argmax", func(t *testing.T) { testArgmax(t, b) }},
		{"TopK", func(t *testing.T) { testTopK(t, b) }},
		{"MaskLogits", func(t *testing.T) { testMaskLogits(t, b) }},
	}
	// The encoder ops, for a backend that has them (model.EncoderOps).
	if _, ok := b.(model.EncoderOps); ok {
		ops = append(ops, []struct {
			name string
			run  func(*testing.T)
		}{
			{"AddBias", func(t *testing.T) { testAddBias(t, b) }},
			{"LayerNorm", func(t *testing.T) { testLayerNorm(t, b) }},
			{"Rope", func(t *testing.T) { testRope(t, b) }},
			{"AttendSeq", func(t *testing.T) { testAttendSeq(t, b, o) }},
			{"Pool", func(t *testing.T) { testPool(t, b) }},
		}...)
	}
	for _, op := range ops {
		if o.Only != "" && !slices.Contains(strings.Split(o.Only, ","), op.name) {
			continue
		}
		t.Run(op.name, op.run)
	}
}

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func randF32(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = (r.Float32()*2 - 1) * scale
	}
	return v
}

// weight returns a random (shape) tensor of type dt and its exact f32 values.
func weight(r *rand.Rand, dt loader.DType, shape ...int) (*loader.Tensor, []float32) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	size, err := dt.Size(n)
	if err != nil {
		panic(err)
	}
	data := make([]byte, size)
	putF16 := func(b []byte, f float32) { h := loader.F32ToF16(f); b[0], b[1] = byte(h), byte(h>>8) }
	switch dt {
	case loader.F32:
		for i, v := range randF32(r, n, 1) {
			bits := math.Float32bits(v)
			data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
		}
	case loader.F16:
		for i, v := range randF32(r, n, 1) {
			putF16(data[2*i:], v)
		}
	case loader.Q8_0, loader.Q4_0:
		bb := dt.BlockBytes()
		for b := 0; b < n/32; b++ {
			blk := data[b*bb : (b+1)*bb]
			for j := 2; j < bb; j++ {
				blk[j] = byte(r.Uint32())
			}
			putF16(blk, (r.Float32()+0.05)*0.02)
		}
	case loader.Q8, loader.Q4:
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		qb := n / 2
		if dt == loader.Q8 {
			qb = n
		}
		qb = (qb + 3) &^ 3
		for g := 0; g < n/32; g++ {
			putF16(data[qb+2*g:], (r.Float32()+0.05)*0.02)
		}
		for i := qb + n/32*2; i < len(data); i++ {
			data[i] = 0
		}
	case loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K:
		// random bits, then the f16 super-block scales set so that the
		// values stay within about ±2 (kquantScales: where each type keeps them)
		bb := dt.BlockBytes()
		for b := 0; b < n/256; b++ {
			blk := data[b*bb : (b+1)*bb]
			for j := range blk {
				blk[j] = byte(r.Uint32())
			}
			for _, off := range kquantScales[dt] {
				putF16(blk[off:], (r.Float32()+0.05)*0.004)
			}
		}
	default:
		panic("backendtest: weight type " + dt.String())
	}
	t := &loader.Tensor{Name: fmt.Sprintf("w_%s_%v", dt, shape), DType: dt, Shape: shape, Data: data}
	f, err := t.F32()
	if err != nil {
		panic(err)
	}
	return t, f
}

// kquantScales are the byte offsets of each K-quant block's f16 super-block
// scale (and min).
var kquantScales = map[loader.DType][]int{
	loader.Q2_K: {80, 82}, loader.Q3_K: {108}, loader.Q4_K: {0, 2}, loader.Q5_K: {0, 2}, loader.Q6_K: {208},
}

func upload(t testing.TB, b model.Backend, w *loader.Tensor) model.Tensor {
	t.Helper()
	x, err := b.Upload(w)
	if err != nil {
		t.Fatalf("upload %s: %v", w.Name, err)
	}
	return x
}

func f32Tensor(name string, v []float32, shape ...int) *loader.Tensor {
	data := make([]byte, 4*len(v))
	for i, f := range v {
		bits := math.Float32bits(f)
		data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: shape, Data: data}
}

func input(t testing.TB, b model.Backend, v []float32, shape ...int) model.Tensor {
	x := b.NewF32(shape...)
	b.WriteF32(x, v)
	return x
}

func ids(t testing.TB, b model.Backend, v []int32) model.Tensor {
	x := b.NewI32(len(v))
	b.WriteI32(x, v)
	return x
}

func read(t testing.TB, b model.Backend, x model.Tensor, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := b.ReadF32(x, out); err != nil {
		t.Fatalf("read: %v", err)
	}
	return out
}

func readI(t testing.TB, b model.Backend, x model.Tensor, n int) []int32 {
	t.Helper()
	out := make([]int32, n)
	if err := b.ReadI32(x, out); err != nil {
		t.Fatalf("read: %v", err)
	}
	return out
}

// compare fails when max|got-want| exceeds tol × max(max|want|, 1e-6),
// printing the worst index.
func compare(t testing.TB, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d values, want %d", what, len(got), len(want))
		return
	}
	var maxW, maxD float64
	worst := -1
	for i := range want {
		maxW = math.Max(maxW, math.Abs(float64(want[i])))
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if got[i] == want[i] { // infinities too
			d = 0
		}
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		if d > maxD || worst < 0 {
			maxD, worst = d, i
		}
	}
	if maxD > tol*math.Max(maxW, 1e-6) {
		t.Errorf("%s: index %d: got %v want %v (error %.3g of max %.3g > tol %.3g)", what, worst, got[worst], want[worst], maxD, maxW, tol)
	}
}

func compareI(t testing.TB, what string, got, want []int32) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: index %d: got %d want %d", what, i, got[i], want[i])
			return
		}
	}
}
