//go:build js

package gpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"wasmllm/cpu"
	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// attnRef is a cache on the GPU and its host twin for cpu.Attend.
type attnRef struct {
	b          *Backend
	H, Hk, Dh  int
	S          int
	dt         loader.DType
	cache      model.KVCache
	kc, vc     []float32 // (S, Hk, Dh): what the GPU cache holds, rounded like it
	exactK     []float32 // unrounded keys and values, for the f16 tolerance
	exactV     []float32
	r          *rand.Rand
	qkv, out   model.Tensor // fixed tensors for replayed steps (nil until used)
	pos        model.Tensor
	lastT      int
	gotW, want []float32
	window     int // sliding window of the steps (0: every key)
	// recorded, when set, runs after Attend has recorded its commands
	// and before they are submitted.
	recorded func()
}

// setSplits fixes the decode kernel's NS for this cache (0: the backend's
// choice for its capacity).
func (a *attnRef) setSplits(ns int) {
	c := a.cache.(*kvCache)
	if ns == 0 {
		ns = a.b.tune.decodeSplits(c.capacity)
	}
	c.splits = ns
}

// setLanes fixes the decode kernel's LANES for this cache (0: the
// backend's choice for its adapter).
func (a *attnRef) setLanes(l int) {
	c := a.cache.(*kvCache)
	if l == 0 {
		l = a.b.tune.decodeLanes(c.headDim)
	}
	c.lanes = l
}

func newAttnRef(t testing.TB, b *Backend, dt loader.DType, H, Hk, Dh, S int, seed uint64) *attnRef {
	t.Helper()
	cache, err := b.NewKVCacheOf(dt, 2, S, Hk, Dh)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.FreeKVCache(cache) })
	n := S * Hk * Dh
	return &attnRef{b: b, H: H, Hk: Hk, Dh: Dh, S: S, dt: dt, cache: cache,
		kc: make([]float32, n), vc: make([]float32, n), exactK: make([]float32, n), exactV: make([]float32, n),
		r: rand.New(rand.NewPCG(seed, 7))}
}

func roundF16(v []float32) {
	for i, f := range v {
		v[i] = loader.F16ToF32(loader.F32ToF16(f))
	}
}

// step runs T tokens at positions start.. through layer 1 of the cache and
// returns the GPU output, the reference on the cache as stored, and the
// reference on exact keys and values.
func (a *attnRef) step(t testing.TB, start, T int, fixed bool) (got, want, exact []float32) {
	t.Helper()
	C := (a.H + 2*a.Hk) * a.Dh
	qv := randF32(a.r, T*C)
	pos := make([]int32, T)
	for i := range pos {
		pos[i] = int32(start + i)
	}
	b := a.b
	var q, p, out model.Tensor
	if fixed {
		if a.qkv == nil || a.lastT != T {
			a.qkv, a.pos, a.out, a.lastT = b.NewF32(T, C), b.NewI32(T), b.NewF32(T, a.H*a.Dh), T
		}
		q, p, out = a.qkv, a.pos, a.out
	} else {
		q, p, out = b.NewF32(T, C), b.NewI32(T), b.NewF32(T, a.H*a.Dh)
		defer func() { b.Free(q); b.Free(p); b.Free(out) }()
	}
	// this step's keys and values into the cache, as RoPEKV would
	kvw, qw := a.Hk*a.Dh, a.H*a.Dh
	ks, vs := make([]float32, T*kvw), make([]float32, T*kvw)
	for r := range T {
		copy(ks[r*kvw:(r+1)*kvw], qv[r*C+qw:])
		copy(vs[r*kvw:(r+1)*kvw], qv[r*C+qw+kvw:])
	}
	a.store(t, start, ks, vs)
	b.WriteF32(q, qv)
	b.WriteI32(p, pos)
	b.Attend(out, q, p, a.cache, 1, a.window, false)
	if a.recorded != nil {
		a.recorded()
	}
	got = make([]float32, T*a.H*a.Dh)
	if err := b.ReadF32(out, got); err != nil {
		t.Fatal(err)
	}

	exact = make([]float32, len(got))
	cpu.Attend(exact, qv, pos, a.exactK, a.exactV, T, a.H, a.Hk, a.Dh, a.window, false)
	want = make([]float32, len(got))
	cpu.Attend(want, qv, pos, a.kc, a.vc, T, a.H, a.Hk, a.Dh, a.window, false)
	return got, want, exact
}

// fill writes random keys and values for positions [0, n) of layer 1
// straight into the cache buffers and the host twin.
func (a *attnRef) fill(t testing.TB, n int) {
	t.Helper()
	kvw := a.Hk * a.Dh
	a.store(t, 0, randF32(a.r, n*kvw), randF32(a.r, n*kvw))
}

// store writes keys and values k, v (n, Hk*Dh) at positions [start,
// start+n) of layer 1 straight into the cache buffers (head-major, as the
// cache's type holds them) and the host twins: rounded like the cache in
// kc, vc, exact in exactK, exactV. RoPEKV is what writes the cache in a
// forward; here Attend is checked on cache contents the test knows.
func (a *attnRef) store(t testing.TB, start int, k, v []float32) {
	t.Helper()
	c := a.cache.(*kvCache)
	kvw := a.Hk * a.Dh
	n := len(k) / kvw
	for i, vals := range [][]float32{k, v} {
		copy([][]float32{a.exactK, a.exactV}[i][start*kvw:], vals)
		vals = append([]float32(nil), vals...)
		if a.dt == loader.F16 {
			roundF16(vals)
		}
		copy([][]float32{a.kc, a.vc}[i][start*kvw:], vals)
		// (n, Hk, Dh) -> (Hk, n, Dh) at row start of each head
		for kh := 0; kh < a.Hk; kh++ {
			head := make([]float32, n*a.Dh)
			for s := 0; s < n; s++ {
				copy(head[s*a.Dh:(s+1)*a.Dh], vals[s*kvw+kh*a.Dh:])
			}
			raw := f32Bytes(head)
			elt := 4
			if a.dt == loader.F16 {
				elt = 2
				for j, f := range head {
					h := loader.F32ToF16(f)
					raw[2*j], raw[2*j+1] = byte(h), byte(h>>8)
				}
				raw = raw[:2*len(head)]
			}
			buf := [2][]*webgpu.Buffer{c.k, c.v}[i][1]
			if err := a.b.d.WriteBuffer(buf, uint64((kh*a.S+start)*a.Dh*elt), raw); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkClose fails when max|got-want| > tol × max|want|, naming the worst
// index. It returns the relative error.
func checkClose(t testing.TB, what string, got, want []float32, tol float64) float64 {
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
	rel := maxD / math.Max(maxW, 1e-6)
	if rel > tol {
		t.Errorf("%s: index %d: got %v want %v (error %.3g of max %.3g > tol %.3g)", what, worst, got[worst], want[worst], maxD, maxW, tol)
	}
	return rel
}

const attnTol = 1e-4 // relative to the largest output, as backendtest

// TestAttentionChunkBoundary decodes at positions around the 64-key chunk
// boundaries of the flash-decoding kernel, after a prefill, with 1 to 4
// splits: one split's online softmax crosses every boundary.
func TestAttentionChunkBoundary(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	// H/Hk = 16 and 12 take two batches of query heads per kv head.
	for i, sh := range [][3]int{{8, 2, 32}, {4, 4, 64}, {16, 1, 16}, {24, 2, 32}} {
		H, Hk, Dh := sh[0], sh[1], sh[2]
		a := newAttnRef(t, b, loader.F32, H, Hk, Dh, 200, 1)
		a.setSplits([]int{4, 1, 2, 3}[i])
		// Batches fill the positions the single steps skip: 0-61, 67-125, 131-190.
		a.step(t, 0, 62, false)
		for _, span := range [][3]int{{62, 67, 126}, {126, 131, 191}} { // single steps [a, b), then a batch to c
			for p := span[0]; p < span[1]; p++ {
				got, want, _ := a.step(t, p, 1, true)
				checkClose(t, fmt.Sprintf("decode H=%d Hk=%d Dh=%d NS=%d at %d", H, Hk, Dh, [4]int{4, 1, 2, 3}[i], p), got, want, attnTol)
			}
			a.step(t, span[1], span[2]-span[1], false)
		}
		// A two-token step crosses the last boundary the cache has.
		got, want, _ := a.step(t, 191, 2, false)
		checkClose(t, fmt.Sprintf("decode H=%d Hk=%d Dh=%d T=2 at 191", H, Hk, Dh), got, want, attnTol)
	}
}

// TestAttentionLongContext decodes past 64 chunks, so that every split
// folds several chunks and every thread of the reduce kernel folds several
// splits, in f32 and f16, with the backend's NS and with 3 and 32 splits.
// G=8 takes two blocks of four query heads a workgroup, G=2 one block with
// two of its four unused.
func TestAttentionLongContext(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	for _, c := range []struct {
		dt        loader.DType
		H, Hk, Dh int
	}{{loader.F32, 4, 1, 16}, {loader.F32, 8, 2, 128}, {loader.F16, 8, 2, 64}, {loader.F16, 8, 1, 64}, {loader.F32, 16, 2, 128}, {loader.F16, 12, 2, 32}} {
		a := newAttnRef(t, b, c.dt, c.H, c.Hk, c.Dh, 4200, 6)
		a.fill(t, 4133)
		for _, st := range [][2]int{{4133, 1}, {4134, 2}, {4136, 1}, {4137, 9}} {
			for _, ns := range []int{0, 3, 32} {
				a.setSplits(ns)
				got, want, _ := a.step(t, st[0], st[1], false)
				checkClose(t, fmt.Sprintf("%s H=%d Hk=%d Dh=%d T=%d at %d, NS=%d", c.dt, c.H, c.Hk, c.Dh, st[1], st[0], a.cache.(*kvCache).splits), got, want, attnTol)
			}
		}
	}
}

// TestAttentionDecodeLanes runs the decode kernel with Dh/16 threads a key
// (the GPU layout; a CPU adapter takes one) at every head dim that has
// it, in f32 and f16, for G = 1, 4 and 8 (two batches of four query heads:
// a lane's registers hold four), past many chunks with 1, 3 and 32 splits,
// at chunk boundaries, and with a sliding window that starts inside a
// chunk. On a CPU adapter the backend picks one lane.
func TestAttentionDecodeLanes(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	if got, want := b.tune.decodeLanes(128), map[bool]int{true: 1, false: 8}[b.d.AdapterInfo.Fallback]; got != want {
		t.Errorf("decodeLanes(128) = %d on an adapter with fallback %v; want %d", got, b.d.AdapterInfo.Fallback, want)
	}
	for _, c := range []struct{ want, Dh int }{{2, 32}, {4, 64}, {8, 128}, {16, 256}, {1, 16}, {1, 48}, {1, 96}} {
		if got := laneCount(c.Dh); got != c.want {
			t.Errorf("laneCount(%d) = %d; want %d", c.Dh, got, c.want)
		}
	}
	seed := uint64(40)
	for _, dt := range []loader.DType{loader.F32, loader.F16} {
		for _, sh := range [][3]int{{2, 2, 32}, {8, 2, 64}, {16, 2, 128}, {8, 1, 256}, {4, 1, 128}} {
			H, Hk, Dh := sh[0], sh[1], sh[2]
			seed++
			a := newAttnRef(t, b, dt, H, Hk, Dh, 700, seed)
			a.setLanes(laneCount(Dh))
			tol := attnTol
			what := fmt.Sprintf("%s H=%d Hk=%d Dh=%d lanes=%d", dt, H, Hk, Dh, laneCount(Dh))
			a.fill(t, 640)
			for _, st := range [][2]int{{640, 1}, {641, 2}, {643, 1}} {
				for _, ns := range []int{1, 3, 32} {
					a.setSplits(ns)
					got, want, _ := a.step(t, st[0], st[1], false)
					checkClose(t, fmt.Sprintf("%s T=%d at %d NS=%d", what, st[1], st[0], ns), got, want, tol)
				}
			}
			a.setSplits(0)
			for p := 644; p < 650; p++ {
				got, want, _ := a.step(t, p, 1, true)
				checkClose(t, fmt.Sprintf("%s at %d", what, p), got, want, tol)
			}
			a.window = 77 // keys 573..649 at position 649: the window starts inside a chunk
			got, want, _ := a.step(t, 650, 1, false)
			checkClose(t, what+" window 77 at 650", got, want, tol)
		}
	}
}

// TestAttentionDecodeReplay decodes one token at many positions with the
// same tensors: every step after the first replays one recorded program.
func TestAttentionDecodeReplay(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	a := newAttnRef(t, b, loader.F32, 8, 2, 64, 300, 2)
	a.step(t, 0, 5, false)
	a.step(t, 5, 1, true)
	builds := b.Stats().ProgramBuilds
	flushes := b.Stats().Flushes
	for p := 6; p < 280; p += 7 {
		// Positions not checked are written too, so the cache stays dense.
		for q := p; q < p+7 && q < 280; q++ {
			got, want, _ := a.step(t, q, 1, true)
			if q == p {
				checkClose(t, fmt.Sprintf("decode at %d", q), got, want, attnTol)
			}
		}
	}
	if n := b.Stats().ProgramBuilds - builds; n != 0 {
		t.Errorf("%d programs recorded across decode steps at different positions; want 0", n)
	}
	if n := b.Stats().Flushes - flushes; n != 274 {
		t.Errorf("%d submits for 274 decode steps", n)
	}
}

// TestAttentionPrefill runs batches of 7, 33 and 64 tokens from position 0
// and from a nonzero start, over head dims and GQA ratios.
func TestAttentionPrefill(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	seed := uint64(10)
	for _, Dh := range []int{16, 32, 64, 128} {
		for _, g := range [][2]int{{2, 2}, {8, 2}, {8, 1}} { // H, Hk: H/Hk = 1, 4, 8
			H, Hk := g[0], g[1]
			for _, T := range []int{7, 33, 64} {
				seed++
				start := 0
				if seed%2 == 0 {
					start = 29 + int(seed%40)
				}
				a := newAttnRef(t, b, loader.F32, H, Hk, Dh, start+T+5, seed)
				if start > 0 {
					a.step(t, 0, start, false)
				}
				got, want, _ := a.step(t, start, T, false)
				checkClose(t, fmt.Sprintf("prefill H=%d Hk=%d Dh=%d T=%d at %d", H, Hk, Dh, T, start), got, want, attnTol)
			}
		}
	}
}

// TestAttentionHeadDim256 covers the largest head whose decode value
// threads take one unit in f32.
func TestAttentionHeadDim256(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	a := newAttnRef(t, b, loader.F32, 8, 2, 256, 100, 3)
	got, want, _ := a.step(t, 0, 20, false)
	checkClose(t, "prefill Dh=256 T=20", got, want, attnTol)
	got, want, _ = a.step(t, 20, 9, false)
	checkClose(t, "prefill Dh=256 T=9 at 20", got, want, attnTol)
	for p := 29; p < 70; p++ {
		got, want, _ = a.step(t, p, 1, true)
		checkClose(t, fmt.Sprintf("decode Dh=256 at %d", p), got, want, attnTol)
	}
}

// TestAttentionHeadDim512 covers Gemma 4 E2B's global heads (512; 320 an
// awkward one past 256) in f32 and f16 caches: prefill (two-row tiles),
// decode with one thread a key and with Dh/16 lanes, across chunks and
// splits, and the reduce that takes two units a thread; 520 is refused.
func TestAttentionHeadDim512(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	seed := uint64(60)
	for _, dt := range []loader.DType{loader.F32, loader.F16} {
		for _, sh := range [][3]int{{8, 1, 512}, {2, 2, 320}} {
			H, Hk, Dh := sh[0], sh[1], sh[2]
			seed++
			a := newAttnRef(t, b, dt, H, Hk, Dh, 200, seed)
			what := fmt.Sprintf("%s H=%d Hk=%d Dh=%d", dt, H, Hk, Dh)
			tol := attnTol
			got, want, _ := a.step(t, 0, 70, false)
			checkClose(t, what+" prefill T=70", got, want, tol)
			got, want, _ = a.step(t, 70, 9, false)
			checkClose(t, what+" prefill T=9 at 70", got, want, tol)
			p := 79 // two chunks of keys: NS=2 splits them
			for _, lanes := range []int{1, laneCount(Dh)} {
				a.setLanes(lanes)
				for _, ns := range []int{1, 2} {
					a.setSplits(ns)
					got, want, _ = a.step(t, p, 1, false)
					checkClose(t, fmt.Sprintf("%s decode lanes=%d NS=%d at %d", what, lanes, ns, p), got, want, tol)
					p++
				}
			}
		}
	}
	if _, err := b.NewKVCacheOf(loader.F32, 1, 8, 1, 520); err == nil {
		t.Error("a cache of heads of 520 was made; want a *KVShapeError")
	}
	if _, err := b.NewKVCacheOf(loader.F32, 1, 8, 1, 260); err == nil {
		t.Error("a cache of heads of 260 (not a multiple of 8 past 256) was made; want a *KVShapeError")
	}
}

// f16Tol is the f16 cache's tolerance against exact keys and values, 30
// times attnTol: rounding keys and values to 11 significant bits moves the
// outputs by about 1e-3 of their largest value (TestAttentionF16 logs the
// worst case). The golden rules allow 10 times the golden tolerance on
// logits with an f16 cache; this is the per-op bound behind it.
const f16Tol = 3e-3

// TestAttentionF16 checks the f16 cache against the reference on the same
// f16-rounded keys and values (f32 accuracy), and on exact ones (f16Tol).
func TestAttentionF16(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	var worst, worstExact float64
	for _, sh := range [][3]int{{8, 2, 64}, {4, 1, 128}, {8, 8, 16}} {
		H, Hk, Dh := sh[0], sh[1], sh[2]
		a := newAttnRef(t, b, loader.F16, H, Hk, Dh, 150, 4)
		for _, st := range [][2]int{{0, 33}, {33, 1}, {34, 64}, {98, 1}, {99, 2}, {101, 7}} {
			got, want, exact := a.step(t, st[0], st[1], false)
			what := fmt.Sprintf("f16 H=%d Hk=%d Dh=%d T=%d at %d", H, Hk, Dh, st[1], st[0])
			worst = math.Max(worst, checkClose(t, what+" (rounded reference)", got, want, attnTol))
			worstExact = math.Max(worstExact, checkClose(t, what+" (exact reference)", got, exact, f16Tol))
		}
	}
	t.Logf("worst relative error: %.3g against f16-rounded keys and values, %.3g against exact ones", worst, worstExact)
}

// TestAttentionDecodeFallback lowers the binding limit below the decode
// partials, so a one-token step takes the prefill kernel.
func TestAttentionDecodeFallback(t *testing.T) {
	// K buffer 16 KiB; partials of H=1024, Dh=4: 32 KiB a split.
	const S = 1024
	b := newTestBackend(t, webgpu.Options{MaxStorageBufferBindingSize: 24 << 10})
	a := newAttnRef(t, b, loader.F32, 1024, 1, 4, S, 5)
	a.fill(t, 192)
	got, want, _ := a.step(t, 192, 1, false)
	checkClose(t, "decode by the prefill kernel", got, want, attnTol)
	if c := a.cache.(*kvCache); c.part != nil {
		t.Errorf("partials of %d bytes allocated over a 24 KiB binding limit", c.part.Size())
	}
}

// TestAttentionDecodeWork decodes at position 10 in caches of 64 and 4096
// positions, and at 1000 and 4000 in the larger, and checks what the step
// costs: the partial kernel's dispatch is recorded with NS splits (at most
// maxDecodeSplits whatever the capacity) and, in the stats the splits
// write (cleared before the step), only the splits that hold keys did key
// work: min(NS, chunks up to the position), pos+1 keys in all.
func TestAttentionDecodeWork(t *testing.T) {
	const H, Hk, Dh = 8, 2, 32 // G=4: QB=4, one batch per kv head
	b := newTestBackend(t, webgpu.Options{})
	type work struct{ groups, active, chunks, keys int }
	measure := func(a *attnRef, pos int) work {
		t.Helper()
		c := a.cache.(*kvCache)
		var w work
		a.recorded = func() {
			var seen int
			for _, cm := range b.pending {
				if cm.kind != cmdDispatch || cm.k.key.file != "attention_decode.wgsl" {
					continue
				}
				seen++
				switch cm.k.key.entry {
				case "partial":
					if cm.x != c.splits || cm.y != Hk || cm.z != 1 {
						t.Errorf("cap %d: partial dispatch (%d, %d, %d), want (%d, %d, 1)", c.capacity, cm.x, cm.y, cm.z, c.splits, Hk)
					}
					w.groups = cm.x * cm.y * cm.z
				case "reduce":
					if cm.x != H || cm.y != 1 || cm.z != 1 {
						t.Errorf("cap %d: reduce dispatch (%d, %d, %d), want (%d, 1, 1)", c.capacity, cm.x, cm.y, cm.z, H)
					}
				}
			}
			if seen != 2 {
				t.Errorf("cap %d: %d decode dispatches recorded, want partial and reduce", c.capacity, seen)
			}
		}
		defer func() { a.recorded = nil }()
		ns := c.splits
		S := decodeSlices(Dh, false)
		stats := H * ns * S * Dh / 4 // in vec4, as Params.stats
		if err := b.d.WriteBuffer(c.part, 0, make([]byte, c.part.Size())); err != nil {
			t.Fatal(err)
		}
		got, want, _ := a.step(t, pos, 1, true)
		checkClose(t, fmt.Sprintf("cap %d NS %d at %d", c.capacity, ns, pos), got, want, attnTol)
		raw := make([]byte, H*ns*S*16)
		if err := b.d.ReadBuffer(c.part, uint64(stats*16), raw); err != nil {
			t.Fatal(err)
		}
		st := bytesF32(raw) // (H, NS, S) (m, l, chunks, keys); slice 0 counts the split's work
		for h := 0; h < H; h++ {
			var active, chunks, keys int
			for s := 0; s < ns*S; s++ {
				if n := int(st[(h*ns*S+s)*4+2]); n > 0 {
					active++
					chunks += n
					keys += int(st[(h*ns*S+s)*4+3])
				}
			}
			if h == 0 {
				w.active, w.chunks, w.keys = active, chunks, keys
			} else if active != w.active || chunks != w.chunks || keys != w.keys {
				t.Errorf("cap %d at %d: head %d did %d splits, %d chunks, %d keys; head 0 %d, %d, %d",
					c.capacity, pos, h, active, chunks, keys, w.active, w.chunks, w.keys)
			}
		}
		t.Logf("cap %d NS %d at %d: %d workgroups, %d of them with keys: %d chunks, %d keys a query head",
			c.capacity, ns, pos, w.groups, w.active*Hk, w.chunks, w.keys)
		return w
	}
	small := newAttnRef(t, b, loader.F32, H, Hk, Dh, 64, 8)
	small.fill(t, 10)
	small.step(t, 10, 1, true) // allocates the partials
	ref := measure(small, 10)
	if ref != (work{groups: Hk, active: 1, chunks: 1, keys: 11}) {
		t.Errorf("cap 64 at 10: %+v", ref)
	}
	for _, ns := range []int{0, maxDecodeSplits} {
		large := newAttnRef(t, b, loader.F32, H, Hk, Dh, 4096, 9)
		large.setSplits(ns)
		ns = large.cache.(*kvCache).splits
		if ns > maxDecodeSplits {
			t.Errorf("NS %d for 4096 positions, over %d", ns, maxDecodeSplits)
		}
		large.fill(t, 4000)
		large.step(t, 10, 1, true)
		for _, pos := range []int{10, 1000, 4000} {
			w := measure(large, pos)
			chunks := pos/decodeChunk + 1
			want := work{groups: ns * Hk, active: min(ns, chunks), chunks: chunks, keys: pos + 1}
			if w != want {
				t.Errorf("cap 4096 NS %d at %d: %+v, want %+v", ns, pos, w, want)
			}
			if pos == 10 && (w.active != ref.active || w.chunks != ref.chunks || w.keys != ref.keys) {
				t.Errorf("cap 4096 at 10 did %+v of key work; cap 64 %+v", w, ref)
			}
		}
	}
}

// TestKVCacheLimit forces a small binding limit: a cache whose layer
// buffer exceeds it is refused before allocation with the bytes needed and
// allowed; one that fits is made.
func TestKVCacheLimit(t *testing.T) {
	const lim = 1 << 20
	b := newTestBackend(t, webgpu.Options{MaxStorageBufferBindingSize: lim})
	// 8 heads × 128 × 4 bytes = 4 KiB a position: 256 positions fit.
	_, err := b.NewKVCache(4, 257, 8, 128)
	var ke *KVCacheError
	if !errors.As(err, &ke) {
		t.Fatalf("NewKVCache over the limit: %v, want a *KVCacheError", err)
	}
	if ke.Need != 257*4096 || ke.Have != lim || ke.Limit != "maxStorageBufferBindingSize" || ke.MaxCapacity != 256 || ke.Total != 257*4096*8 {
		t.Errorf("error %+v", ke)
	}
	t.Log(err)
	c, err := b.NewKVCache(4, 256, 8, 128)
	if err != nil {
		t.Fatalf("NewKVCache at the limit: %v", err)
	}
	b.FreeKVCache(c)
	// In f16, 512 positions fit.
	if _, err := b.NewKVCacheOf(loader.F16, 4, 513, 8, 128); !errors.As(err, &ke) || ke.MaxCapacity != 512 {
		t.Errorf("f16 over the limit: %v", err)
	}
	c, err = b.NewKVCacheOf(loader.F16, 4, 512, 8, 128)
	if err != nil {
		t.Fatalf("f16 at the limit: %v", err)
	}
	b.FreeKVCache(c)

	// maxBufferSize below the binding limit is the one named.
	b2 := newTestBackend(t, webgpu.Options{MaxBufferSize: lim / 2})
	if _, err := b2.NewKVCache(1, 129, 8, 128); !errors.As(err, &ke) || ke.Limit != "maxBufferSize" || ke.Have != lim/2 || ke.MaxCapacity != 128 {
		t.Errorf("over maxBufferSize: %v", err)
	}

	var se *KVShapeError
	for _, bad := range [][4]int{{0, 8, 1, 64}, {1, 0, 1, 64}, {1, 8, 0, 64}, {1, 8, 1, 0}, {1, 8, 1, 6}, {1, 8, 1, 260}, {1, 1 << 62, 1, 64}} {
		if _, err := b.NewKVCache(bad[0], bad[1], bad[2], bad[3]); !errors.As(err, &se) {
			t.Errorf("NewKVCache%v: %v, want a *KVShapeError", bad, err)
		}
	}
	if _, err := b.NewKVCacheOf(loader.F16, 1, 8, 1, 12); !errors.As(err, &se) {
		t.Errorf("f16 head dim 12: %v, want a *KVShapeError", err)
	}
	if _, err := b.NewKVCacheOf(loader.Q8, 1, 8, 1, 64); !errors.As(err, &se) {
		t.Errorf("a planar Q8 cache: %v, want a *KVShapeError", err)
	}
	// A q8 cache (model.KVQ8) reads units of 16 values: heads of 8 are
	// refused; heads of 64 take 64 + 2·4 bytes a position and head.
	if _, err := b.NewKVCacheOf(model.KVQ8, 1, 8, 1, 8); !errors.As(err, &se) {
		t.Errorf("q8 head dim 8: %v, want a *KVShapeError", err)
	}
	q8, err := b.NewKVCacheOf(model.KVQ8, 2, 8, 3, 64)
	if err != nil {
		t.Fatalf("q8 cache: %v", err)
	}
	if n := cacheBytes(q8.(*kvCache)); n != 2*2*8*3*(64+8) {
		t.Errorf("q8 cache of %d bytes, want %d", n, 2*2*8*3*(64+8))
	}
	b.FreeKVCache(q8)
}

// TestAttentionBadInput: mismatched tensors are op errors at the next
// Read, never a panic or a silent result.
func TestAttentionBadInput(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	cache, err := b.NewKVCache(2, 16, 2, 16)
	if err != nil {
		t.Fatal(err)
	}
	out := b.NewF32(1, 64)
	for name, f := range map[string]func(){
		"layer":     func() { b.Attend(out, b.NewF32(1, 128), b.NewI32(1), cache, 2, 0, false) },
		"window":    func() { b.Attend(out, b.NewF32(1, 128), b.NewI32(1), cache, 0, -1, false) },
		"width":     func() { b.Attend(out, b.NewF32(1, 120), b.NewI32(1), cache, 0, 0, false) },
		"ratio":     func() { b.Attend(b.NewF32(1, 48), b.NewF32(1, 112), b.NewI32(1), cache, 0, 0, false) },
		"pos":       func() { b.Attend(out, b.NewF32(1, 128), b.NewI32(2), cache, 0, 0, false) },
		"out":       func() { b.Attend(b.NewF32(1, 32), b.NewF32(1, 128), b.NewI32(1), cache, 0, 0, false) },
		"foreign":   func() { b.Attend(out, b.NewF32(1, 128), b.NewI32(1), &cpu.KVCache{}, 0, 0, false) },
		"pos dtype": func() { b.Attend(out, b.NewF32(1, 128), b.NewF32(1), cache, 0, 0, false) },
	} {
		f()
		if err := b.ReadF32(out, make([]float32, 64)); !errors.Is(err, ErrOp) {
			t.Errorf("%s: %v, want ErrOp", name, err)
		}
	}
	b.FreeKVCache(cache)
	b.Attend(out, b.NewF32(1, 128), b.NewI32(1), cache, 0, 0, false)
	if err := b.ReadF32(out, make([]float32, 64)); !errors.Is(err, ErrOp) {
		t.Errorf("freed cache: %v, want ErrOp", err)
	}
}

// BenchmarkAttentionDecode is one layer's decode attention of a Llama-3-8B
// shape (H=32, Hk=8, Dh=128) at contexts of 1k and 4k; SetBytes counts the
// keys and values read, so MB/s is the KV bandwidth. The add/ctx=N cases
// are the baseline: gputest.AddWGSL reading the same bytes. The
// pos=P/cap=S cases decode at position P in a cache of capacity S: their
// time should follow P, not S.
func BenchmarkAttentionDecode(bm *testing.B) {
	const H, Hk, Dh = 32, 8, 128
	for _, ctx := range []int{1024, 4096} {
		for _, dt := range []loader.DType{loader.F32, loader.F16} {
			bm.Run(fmt.Sprintf("%s/ctx=%d", dt, ctx), func(bm *testing.B) {
				benchDecode(bm, dt, ctx-1, ctx, 0, 0, H, Hk, Dh)
			})
		}
		bm.Run(fmt.Sprintf("add/ctx=%d", ctx), func(bm *testing.B) {
			benchAdd(bm, 2*ctx*Hk*Dh*4)
		})
		// Llama-3.2-1B's heads (Dh=64), the shape of make bench's table.
		for _, dt := range []loader.DType{loader.F32, loader.F16} {
			bm.Run(fmt.Sprintf("%s/Dh=64/ctx=%d", dt, ctx), func(bm *testing.B) {
				benchDecode(bm, dt, ctx-1, ctx, 0, 0, H, Hk, 64)
			})
		}
		// The other score layout than the adapter's: one thread a key
		// against Dh/16 lanes a key with the queries in registers.
		for _, Dh := range []int{64, 128} {
			bm.Run(fmt.Sprintf("F32/Dh=%d/ctx=%d/lanes=1", Dh, ctx), func(bm *testing.B) {
				benchDecode(bm, loader.F32, ctx-1, ctx, 0, 1, H, Hk, Dh)
			})
			bm.Run(fmt.Sprintf("F32/Dh=%d/ctx=%d/lanes=%d", Dh, ctx, laneCount(Dh)), func(bm *testing.B) {
				benchDecode(bm, loader.F32, ctx-1, ctx, 0, laneCount(Dh), H, Hk, Dh)
			})
		}
	}
	for _, pos := range []int{10, 1000} {
		for _, capacity := range []int{64, 1024, 4096} {
			if pos >= capacity {
				continue
			}
			bm.Run(fmt.Sprintf("F32/pos=%d/cap=%d", pos, capacity), func(bm *testing.B) {
				benchDecode(bm, loader.F32, pos, capacity, 0, 0, H, Hk, Dh)
			})
		}
	}
}

// BenchmarkAttentionDecodeSplits decodes the shape of
// BenchmarkAttentionDecode in a 4096-position cache at short and long
// positions with NS from 1 to 32 splits: the data behind maxDecodeSplits.
func BenchmarkAttentionDecodeSplits(bm *testing.B) {
	for _, pos := range []int{10, 1000, 4000} {
		for _, ns := range []int{1, 2, 4, 8, 16, 32} {
			bm.Run(fmt.Sprintf("pos=%d/ns=%d", pos, ns), func(bm *testing.B) {
				benchDecode(bm, loader.F32, pos, 4096, ns, 0, 32, 8, 128)
			})
		}
	}
}

// benchDecode times one-token decode steps at position pos of a cache of
// capacity ctx whose positions [0, pos] hold keys and values, in splits
// workgroups per kv head batch (0: the backend's choice).
// benchDecode times one decode step at pos in a cache of ctx positions;
// splits and lanes of 0 are the backend's choice.
func benchDecode(bm *testing.B, dt loader.DType, pos, ctx, splits, lanes, H, Hk, Dh int) {
	d := device(bm)
	b, err := NewBackend(d, BackendOptions{})
	if err != nil {
		bm.Fatal(err)
	}
	cache, err := b.NewKVCacheOf(dt, 1, ctx, Hk, Dh)
	if err != nil {
		bm.Fatal(err)
	}
	defer b.FreeKVCache(cache)
	if splits > 0 {
		cache.(*kvCache).splits = splits
	}
	if lanes > 0 {
		cache.(*kvCache).lanes = lanes
	}
	C := (H + 2*Hk) * Dh
	r := rand.New(rand.NewPCG(1, 2))
	// Fill the layer directly; the timed step writes position pos.
	c := cache.(*kvCache)
	for _, buf := range []*webgpu.Buffer{c.k[0], c.v[0]} {
		vals := randF32(r, ctx*Hk*Dh)
		raw := f32Bytes(vals)
		if dt == loader.F16 {
			raw = raw[:2*len(vals)]
			for i, f := range vals {
				h := loader.F32ToF16(f)
				raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
			}
		}
		if err := d.WriteBuffer(buf, 0, raw); err != nil {
			bm.Fatal(err)
		}
	}
	q, p, o := b.NewF32(1, C), b.NewI32(1), b.NewF32(1, H*Dh)
	defer func() { b.Free(q); b.Free(p); b.Free(o) }()
	b.WriteF32(q, randF32(r, C))
	b.WriteI32(p, []int32{int32(pos)})
	dst := make([]float32, H*Dh)
	b.Attend(o, q, p, cache, 0, 0, false) // compile and record before timing
	if err := b.ReadF32(o, dst); err != nil {
		bm.Fatal(err)
	}
	elt := int64(4)
	if dt == loader.F16 {
		elt = 2
	}
	bm.SetBytes(2 * int64((pos+1)*Hk*Dh) * elt)
	before := d.Stats()
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		b.Attend(o, q, p, cache, 0, 0, false)
		if err := b.ReadF32(o, dst); err != nil {
			bm.Fatal(err)
		}
	}
	bm.StopTimer()
	s := d.Stats().Sub(before)
	bm.ReportMetric(float64(s.Dispatches)/float64(bm.N), "dispatches/op")
}

// benchAdd times gputest.AddWGSL reading bytes (half from each input) in
// dispatches of 1M elements, with a 4-byte readback like a decode step.
func benchAdd(bm *testing.B, bytes int) {
	d := device(bm)
	k := newAddKernel(bm, d)
	n := bytes / 8
	const per = 1 << 20
	r := rand.New(rand.NewPCG(3, 4))
	a, bb := f32Buffer(bm, d, "a", randF32(r, n)), f32Buffer(bm, d, "b", randF32(r, n))
	out := newBuffer(bm, d, "out", uint64(4*n), webgpu.UsageStorage)
	params := newBuffer(bm, d, "params", 16, webgpu.UsageUniform)
	if err := d.WriteBuffer(params, 0, u32Bytes(per, 0, 0, 0)); err != nil {
		bm.Fatal(err)
	}
	rec := d.NewRecorder("add baseline")
	rec.SetPipeline(k.pipe)
	for off := 0; off < n; off += per {
		m := uint64(4 * min(per, n-off))
		o := uint64(4 * off)
		g, err := d.CreateBindGroup("add", k.layout,
			webgpu.Binding{Binding: 0, Buffer: a, Offset: o, Size: m}, webgpu.Binding{Binding: 1, Buffer: bb, Offset: o, Size: m},
			webgpu.Binding{Binding: 2, Buffer: out, Offset: o, Size: m}, webgpu.Binding{Binding: 3, Buffer: params})
		if err != nil {
			bm.Fatal(err)
		}
		rec.SetBindGroup(0, g)
		rec.Dispatch(groups(per), 1, 1)
	}
	prog, err := rec.Finish()
	if err != nil {
		bm.Fatal(err)
	}
	defer prog.Free()
	dst := make([]byte, 4)
	if err := d.RunRead(prog, nil, out, 0, dst); err != nil {
		bm.Fatal(err)
	}
	bm.SetBytes(int64(bytes))
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		if err := d.RunRead(prog, nil, out, 0, dst); err != nil {
			bm.Fatal(err)
		}
	}
}

// BenchmarkAttentionPrefill is one layer's attention for a 512-token
// prompt batch (Llama-3.2-1B's heads: H=32, Hk=8, Dh=64, and Llama-3-8B's
// Dh=128) from position 0: the causal half of T×T scores, in GFLOP/s of its
// two products (QKᵀ and PV, 2·2·Dh flops per query head and key seen).
func BenchmarkAttentionPrefill(bm *testing.B) {
	for _, Dh := range []int{64, 128} {
		bm.Run(fmt.Sprintf("Dh=%d/T=512", Dh), func(bm *testing.B) {
			const H, Hk, T = 32, 8, 512
			b := benchBackend(bm)
			cache, err := b.NewKVCacheOf(loader.F16, 1, T, Hk, Dh)
			if err != nil {
				bm.Fatal(err)
			}
			defer b.FreeKVCache(cache)
			r := rand.New(rand.NewPCG(5, 6))
			C := (H + 2*Hk) * Dh
			q, p, o := b.NewF32(T, C), b.NewI32(T), b.NewF32(T, H*Dh)
			defer func() { b.Free(q); b.Free(p); b.Free(o) }()
			b.WriteF32(q, randF32(r, T*C))
			ps := make([]int32, T)
			for i := range ps {
				ps[i] = int32(i)
			}
			b.WriteI32(p, ps)
			sec := timeSteps(bm, b, 1, func() { b.Attend(o, q, p, cache, 0, 0, false) }, o)
			seen := float64(T) * float64(T+1) / 2
			bm.ReportMetric(4*float64(Dh)*float64(H)*seen/sec/1e9, "GFLOP/s")
		})
	}
}
