package backendtest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// kvRef is a backend's KV cache (layer 1 of 2) and its host twin.
type kvRef struct {
	b         model.Backend
	cache     model.KVCache
	kc, vc    []float32 // (S, Hk, Dh)
	H, Hk, Dh int
	rope      *model.RoPE
	bias      model.Tensor
	bv        []float32
	qw, kw    model.Tensor
	qv, kv    []float32
	gated     bool // rows carry the output gate after v
	dt        loader.DType
}

func newKVRef(t *testing.T, b model.Backend, H, Hk, Dh, S int, rp *model.RoPE) *kvRef {
	cache, err := b.NewKVCache(2, S, Hk, Dh)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := b.(interface{ FreeKVCache(model.KVCache) }); ok { // the GPU's
		t.Cleanup(func() { f.FreeKVCache(cache) })
	}
	return &kvRef{b: b, cache: cache, kc: make([]float32, S*Hk*Dh), vc: make([]float32, S*Hk*Dh), H: H, Hk: Hk, Dh: Dh, rope: rp, dt: loader.F32}
}

// ropeKV runs RoPEKV on random rows at pos on the backend and the
// reference: the backend's qkv tensor, and the reference's rows.
func (k *kvRef) ropeKV(t *testing.T, r *rand.Rand, pos []int32) (model.Tensor, []float32) {
	t.Helper()
	b, n := k.b, len(pos)
	C := k.width()
	xv := randF32(r, n*C, 2)
	x := input(t, b, xv, n, C)
	b.RoPEKV(x, ids(t, b, pos), k.bias, k.qw, k.kw, k.H+k.Hk, k.Hk, 1e-6, k.rope, k.cache, 1)
	cpu.RoPEKV(xv, pos, k.bv, k.qv, k.kv, k.kc, k.vc, n, k.H, k.Hk, k.Dh, 1e-6, k.rope.NeoX, k.rope.InvFreq, k.rope.CosSinScale(), k.gated)
	kvw := k.Hk * k.Dh
	for _, p := range pos { // what a typed cache keeps of them
		cpu.StoreKV(k.kc[int(p)*kvw:(int(p)+1)*kvw], k.dt, k.Dh)
		cpu.StoreKV(k.vc[int(p)*kvw:(int(p)+1)*kvw], k.dt, k.Dh)
	}
	return x, xv
}

// width is a row of qkv: q, k, v and, when gated, the gate.
func (k *kvRef) width() int {
	if k.gated {
		return (2*k.H + 2*k.Hk) * k.Dh
	}
	return (k.H + 2*k.Hk) * k.Dh
}

func positions(start, n int) []int32 {
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(start + i)
	}
	return pos
}

func testRoPEKV(t *testing.T, b model.Backend, o Options) {
	r := rng(6)
	// The rotation alone at scattered positions, for each frequency table
	// the models use: llama3's scaling, Qwen's base of 1e6, small heads.
	llama3 := &model.Config{HeadDim: 64, RopeTheta: 500000, RopeScaling: &model.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}}
	plain := &model.Config{HeadDim: 128, RopeTheta: 1e6}
	small := &model.Config{HeadDim: 16, RopeTheta: 10000}
	tiny := &model.Config{HeadDim: 8, RopeTheta: 10000} // stories260K
	for _, neox := range []bool{false, true} {
		for _, c := range []*model.Config{llama3, plain, small, tiny} {
			for _, sh := range [][4]int{{1, 1, 3, 0}, {6, 8, 2, 0}, {1, 2, 2, 1}, {5, 3, 3, 1}} { // T, H, Hk, bias
				T, H, Hk, withBias := sh[0], sh[1], sh[2], sh[3] == 1
				Dh := c.HeadDim
				pos := make([]int32, T)
				for i := range pos {
					pos[i] = int32(r.IntN(5000))
				}
				k := newKVRef(t, b, H, Hk, Dh, 5000, &model.RoPE{Dim: Dh, NeoX: neox, InvFreq: c.InvFreq()})
				if withBias { // Qwen2's q/k/v biases; the values are not rotated
					C := (H + 2*Hk) * Dh
					k.bv = randF32(r, C, 1)
					k.bias = upload(t, b, f32Tensor("bias", k.bv, C))
				}
				x, want := k.ropeKV(t, r, pos)
				compare(t, fmt.Sprintf("RoPEKV neox=%v Dh=%d T=%d H=%d Hk=%d bias=%v", neox, Dh, T, H, Hk, withBias), read(t, b, x, len(want)), want, 3e-6)
			}
		}
	}
	// With the q/k norm and the bias, then the cache: Attend reads what
	// RoPEKV wrote.
	tol := o.AttentionTol
	if tol == 0 {
		tol = 1e-4
	}
	cases := [][7]int{ // H, Hk, Dh, prior, T, qknorm, bias
		{8, 2, 16, 0, 1, 1, 0}, {4, 2, 32, 7, 1, 0, 1}, {8, 2, 64, 30, 3, 1, 0}, {4, 1, 128, 5, 6, 0, 0}, {2, 2, 8, 3, 1, 0, 0}, {32, 8, 128, 40, 1, 1, 0},
		{4, 1, 512, 3, 2, 1, 0}, // Gemma 4 E2B's global heads
	}
	for _, neox := range []bool{false, true} {
		for _, c := range cases {
			H, Hk, Dh, prior, T, qkn, withBias := c[0], c[1], c[2], c[3], c[4], c[5] == 1, c[6] == 1
			C := (H + 2*Hk) * Dh
			k := newKVRef(t, b, H, Hk, Dh, prior+T+2, &model.RoPE{Dim: Dh, NeoX: neox, InvFreq: (&model.Config{HeadDim: Dh, RopeTheta: 10000}).InvFreq()})
			if qkn {
				k.qv, k.kv = randF32(r, Dh, 1), randF32(r, Dh, 1)
				k.qw, k.kw = upload(t, b, f32Tensor("q", k.qv, Dh)), upload(t, b, f32Tensor("k", k.kv, Dh))
			}
			if withBias {
				k.bv = randF32(r, C, 1)
				k.bias = upload(t, b, f32Tensor("bias", k.bv, C))
			}
			if prior > 0 {
				k.ropeKV(t, r, positions(0, prior))
			}
			pos := positions(prior, T)
			x, xv := k.ropeKV(t, r, pos)
			out := b.NewF32(T, H*Dh)
			b.Attend(out, x, ids(t, b, pos), k.cache, 1, 0, false)
			want := make([]float32, T*H*Dh)
			cpu.Attend(want, xv, pos, k.kc, k.vc, T, H, Hk, Dh, 0, false)
			what := fmt.Sprintf("neox=%v H=%d Hk=%d Dh=%d at %d T=%d qknorm=%v bias=%v", neox, H, Hk, Dh, prior, T, qkn, withBias)
			compare(t, "RoPEKV qkv "+what, read(t, b, x, T*C), xv, 1e-5)
			compare(t, "RoPEKV+Attend "+what, read(t, b, out, T*H*Dh), want, tol)
		}
	}
}

func testAttend(t *testing.T, b model.Backend, o Options) {
	tol := o.AttentionTol
	if tol == 0 {
		tol = 1e-4
	}
	r := rng(7)
	// prior positions, then T new tokens
	// A sliding window (the last column, 0 for none) cuts keys inside a
	// chunk or tile, drops whole ones, spans one token or covers them all.
	windowed := [][6]int{{8, 2, 16, 0, 12, 5}, {4, 2, 32, 300, 1, 100}, {8, 2, 32, 100, 7, 64}, {4, 1, 128, 511, 2, 1}, {16, 4, 64, 0, 33, 16}, {4, 2, 32, 20, 3, 4096},
		{2, 1, 512, 90, 1, 40}}
	cases := [][6]int{ // H, Hk, Dh, prior, T, window
		{8, 2, 16, 0, 1, 0}, {8, 2, 16, 0, 12, 0}, {4, 2, 32, 254, 1, 0}, {4, 2, 32, 255, 1, 0}, {4, 2, 32, 256, 1, 0},
		{8, 8, 64, 1000, 1, 0}, {32, 8, 128, 300, 1, 0}, {8, 2, 32, 100, 7, 0}, {16, 4, 64, 0, 33, 0}, {4, 1, 128, 511, 2, 0},
		{8, 1, 512, 0, 20, 0}, {8, 1, 512, 130, 1, 0}, // Gemma 4 E2B's global heads: prefill, decode
	}
	if o.Short {
		cases = [][6]int{{8, 2, 16, 0, 1, 0}, {8, 2, 16, 0, 12, 0}, {4, 2, 32, 255, 1, 0}, {4, 2, 32, 256, 1, 0}, {8, 2, 32, 100, 7, 0}, {4, 1, 128, 511, 2, 0},
			{4, 1, 512, 0, 9, 0}, {4, 1, 512, 70, 1, 0}}
	}
	for _, c := range append(cases, windowed...) {
		H, Hk, Dh, prior, T, window := c[0], c[1], c[2], c[3], c[4], c[5]
		k := newKVRef(t, b, H, Hk, Dh, prior+T+3, &model.RoPE{Dim: Dh, NeoX: true, InvFreq: (&model.Config{HeadDim: Dh, RopeTheta: 10000}).InvFreq()})
		if prior > 0 {
			k.ropeKV(t, r, positions(0, prior))
		}
		pos := positions(prior, T)
		x, xv := k.ropeKV(t, r, pos)
		out := b.NewF32(T, H*Dh)
		b.Attend(out, x, ids(t, b, pos), k.cache, 1, window, false)
		want := make([]float32, T*H*Dh)
		cpu.Attend(want, xv, pos, k.kc, k.vc, T, H, Hk, Dh, window, false)
		compare(t, fmt.Sprintf("Attend H=%d Hk=%d Dh=%d at %d T=%d window=%d", H, Hk, Dh, prior, T, window), read(t, b, out, len(want)), want, tol)
	}
}

// testGatedAttention runs Qwen3.5's gated attention: the q/k norm, partial
// NEOX RoPE with IMROPE sections (one set leaves some pairs unrotated),
// RoPEKV on rows that carry the gate, and Attend applying it.
func testGatedAttention(t *testing.T, b model.Backend, o Options) {
	tol := o.AttentionTol
	if tol == 0 {
		tol = 1e-4
	}
	r := rng(11)
	cases := [][7]int{ // H, Hk, Dh, prior, T, rope dim, sections 0: [3 3 2 0]-like, 1: [1 1 1 1]
		{2, 1, 64, 0, 12, 16, 0}, {2, 1, 64, 12, 1, 16, 0}, {8, 2, 32, 5, 3, 8, 1}, {16, 2, 128, 40, 1, 64, 0}, {4, 4, 64, 7, 2, 64, 1},
	}
	for _, c := range cases {
		H, Hk, Dh, prior, T, dim := c[0], c[1], c[2], c[3], c[4], c[5]
		sec := [4]int{dim / 8 * 3 / 2, dim / 8 * 3 / 2, dim/2 - 2*(dim/8*3/2), 0}
		if c[6] == 1 {
			sec = [4]int{1, 1, 1, 1}
		}
		rs := model.RopeSpec{Theta: 1e7, Dim: dim, NeoX: true, Sections: sec}
		k := newKVRef(t, b, H, Hk, Dh, prior+T+2, &model.RoPE{Dim: dim, NeoX: true, InvFreq: rs.InvFreq()})
		k.gated = true
		k.qv, k.kv = randF32(r, Dh, 1), randF32(r, Dh, 1)
		k.qw, k.kw = upload(t, b, f32Tensor("q", k.qv, Dh)), upload(t, b, f32Tensor("k", k.kv, Dh))
		if prior > 0 {
			k.ropeKV(t, r, positions(0, prior))
		}
		pos := positions(prior, T)
		x, xv := k.ropeKV(t, r, pos)
		out := b.NewF32(T, H*Dh)
		b.Attend(out, x, ids(t, b, pos), k.cache, 1, 0, true)
		want := make([]float32, T*H*Dh)
		cpu.Attend(want, xv, pos, k.kc, k.vc, T, H, Hk, Dh, 0, true)
		what := fmt.Sprintf("gated H=%d Hk=%d Dh=%d at %d T=%d rope dim %d sections %v", H, Hk, Dh, prior, T, dim, sec)
		compare(t, "RoPEKV qkv "+what, read(t, b, x, T*k.width()), xv, 1e-5)
		compare(t, "Attend "+what, read(t, b, out, T*H*Dh), want, tol)
	}
}

// testTypedKV runs RoPEKV then Attend over an F16 and a q8 (model.KVQ8)
// cache, for a backend that has them (model.KVCacheAllocator): the
// reference is RoPEKV, StoreKV on the rows written (what the cache
// keeps), then Attend. Heads of 8 (stories260K: one q8 block a head), 32,
// 64, 128 and 512 (blocks of 32; Gemma 4 E2B's global layers), decode and
// prefill batches, a window, the output gate.
func testTypedKV(t *testing.T, b model.Backend, o Options) {
	a, ok := b.(model.KVCacheAllocator)
	if !ok {
		t.Skip("no model.KVCacheAllocator")
	}
	r := rng(41)
	cases := [][7]int{ // H, Hk, Dh, prior, T, window, gated
		{8, 4, 8, 0, 12, 0, 0}, {8, 4, 8, 40, 1, 0, 0}, {4, 2, 32, 255, 1, 0, 0}, {8, 2, 64, 30, 3, 0, 0},
		{4, 1, 128, 100, 7, 0, 0}, {16, 4, 64, 0, 33, 16, 0}, {4, 2, 32, 300, 1, 100, 0}, {8, 2, 32, 5, 3, 0, 1},
		{32, 8, 128, 300, 1, 0, 0}, {8, 1, 512, 70, 1, 0, 0}, {4, 1, 512, 0, 9, 0, 0},
	}
	if o.Short {
		cases = [][7]int{{8, 4, 8, 0, 12, 0, 0}, {8, 4, 8, 40, 1, 0, 0}, {4, 2, 32, 255, 1, 0, 0}, {4, 1, 128, 100, 7, 0, 0}, {4, 2, 32, 300, 1, 100, 0}, {8, 2, 32, 5, 3, 0, 1}}
	}
	for _, dt := range []loader.DType{loader.F16, model.KVQ8} {
		for _, c := range cases {
			H, Hk, Dh, prior, T, window, gated := c[0], c[1], c[2], c[3], c[4], c[5], c[6] == 1
			S := prior + T + 3
			cache, err := a.NewKVCacheOf(dt, 2, S, Hk, Dh)
			if err != nil && dt == model.KVQ8 && Dh%16 != 0 && !o.AllKVHeadDims {
				t.Logf("no q8 cache of heads of %d on this backend: %v", Dh, err)
				continue
			}
			if err != nil {
				t.Fatalf("%v cache: %v", dt, err)
			}
			if model.KVDTypeOf(cache) != dt {
				t.Fatalf("asked a %v cache, got %v", dt, model.KVDTypeOf(cache))
			}
			if f, ok := b.(interface{ FreeKVCache(model.KVCache) }); ok {
				t.Cleanup(func() { f.FreeKVCache(cache) })
			}
			rp := &model.RoPE{Dim: Dh, NeoX: true, InvFreq: (&model.Config{HeadDim: Dh, RopeTheta: 10000}).InvFreq()}
			k := &kvRef{b: b, cache: cache, kc: make([]float32, S*Hk*Dh), vc: make([]float32, S*Hk*Dh), H: H, Hk: Hk, Dh: Dh, rope: rp, dt: dt, gated: gated}
			if prior > 0 {
				k.ropeKV(t, r, positions(0, prior))
			}
			pos := positions(prior, T)
			x, xv := k.ropeKV(t, r, pos)
			out := b.NewF32(T, H*Dh)
			b.Attend(out, x, ids(t, b, pos), cache, 1, window, gated)
			want := make([]float32, T*H*Dh)
			cpu.Attend(want, xv, pos, k.kc, k.vc, T, H, Hk, Dh, window, gated)
			what := fmt.Sprintf("%s cache H=%d Hk=%d Dh=%d at %d T=%d window=%d gated=%v", model.KVDTypeName(dt), H, Hk, Dh, prior, T, window, gated)
			compare(t, "RoPEKV qkv "+what, read(t, b, x, T*k.width()), xv, 1e-5)
			// The reference quantises the same rows; a value whose
			// x/d lies within rounding of a half may round the other way
			// (one step, 1/127 of its block's largest).
			compare(t, "RoPEKV+Attend "+what, read(t, b, out, T*H*Dh), want, 1e-3)
		}
	}
}
