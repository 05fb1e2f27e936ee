package cpu

import (
	"fmt"
	"math"

	"wasmllm/loader"
	"wasmllm/model"
)

// Backend is the plain-Go model.Backend. It executes each op at once, with
// goroutines across output rows, and reads quantised weights block by block.
type Backend struct {
	pool *pool
	mm   matmulTask
	// calls is the SIMD batch scratch of mm (matmulTask.calls).
	calls []kcall
	attn  attnTask
	moe   moeTask
	delta deltaTask
	// fused holds the scratch of the fused ops (fused.go).
	fused fusedBufs
	// ropeCS holds one position's RoPE cosines and sines.
	ropeCS []float32
	// peers, when set, are the other ranks (ranks.go); nextShard numbers
	// the weights split across them; err is the first op failure.
	peers     peers
	minShard  int
	nextShard int
	err       error
	// stackY is matmulStack's scratch.
	stackY []float32
}

// New returns a Backend using threads goroutines (0: GOMAXPROCS).
func New(threads int) *Backend {
	return &Backend{pool: newPool(threads)}
}

var _ model.Backend = (*Backend)(nil)

func t(x model.Tensor) *tensor { return x.(*tensor) }

// Upload implements model.Backend. Q8_0, Q4_0, the planar Q8/Q4 layouts and
// the K-quants (Q2_K..Q6_K, ggml's blocks) stay quantised; everything else
// is widened to f32.
func (b *Backend) Upload(w *loader.Tensor) (model.Tensor, error) {
	if b.peers != nil && shardable(w, b.peers.ranks(), b.minShard) {
		return b.uploadSharded(w)
	}
	return upload(w)
}

// NewF32 implements model.Backend.
func (b *Backend) NewF32(shape ...int) model.Tensor {
	x := &tensor{shape: append([]int(nil), shape...), dtype: loader.F32}
	x.f = make([]float32, x.numel())
	return x
}

// NewI32 implements model.Backend.
func (b *Backend) NewI32(shape ...int) model.Tensor {
	x := &tensor{shape: append([]int(nil), shape...), dtype: loader.I32}
	x.i = make([]int32, x.numel())
	return x
}

// Free implements model.Backend.
func (b *Backend) Free(x model.Tensor) {
	for _, p := range t(x).stack {
		b.Free(p)
	}
	*t(x) = tensor{shape: t(x).shape}
}

// WriteI32 implements model.Backend.
func (b *Backend) WriteI32(x model.Tensor, v []int32) { copy(t(x).i, v) }

// WriteF32 implements model.Backend.
func (b *Backend) WriteF32(x model.Tensor, v []float32) { copy(t(x).f, v) }

// ReadF32 implements model.Backend.
func (b *Backend) ReadF32(x model.Tensor, dst []float32) error {
	if b.err != nil {
		return b.err
	}
	if len(dst) != len(t(x).f) {
		return fmt.Errorf("cpu: ReadF32 of %d values into %d", len(t(x).f), len(dst))
	}
	copy(dst, t(x).f)
	return nil
}

// ReadI32 implements model.Backend.
func (b *Backend) ReadI32(x model.Tensor, dst []int32) error {
	if b.err != nil {
		return b.err
	}
	if len(dst) != len(t(x).i) {
		return fmt.Errorf("cpu: ReadI32 of %d values into %d", len(t(x).i), len(dst))
	}
	copy(dst, t(x).i)
	return nil
}

// Embed implements model.Backend. An id outside the table (the argmax of
// a NaN row, -1, that a pipelined step reads on the backend:
// model.ForwardFrom) gives a row of zeros, logits the engine discards.
func (b *Backend) Embed(out, table, ids model.Tensor) {
	o, tb := t(out), t(table)
	D := tb.cols()
	if tb.shard != nil {
		b.embedSharded(o, tb, t(ids).i)
		return
	}
	V := tb.shape[0]
	for r, id := range t(ids).i {
		dst := o.f[r*D : (r+1)*D]
		if id < 0 || int(id) >= V {
			clear(dst)
			continue
		}
		if tb.dtype == loader.F32 {
			copy(dst, tb.f[int(id)*D:])
		} else {
			tb.row(int(id), dst)
		}
	}
}

// rope is the reference's rope (bit for bit) with each position's angles
// computed once for all its heads, not once per head.
func (b *Backend) rope(x []float32, pos []int32, bias []float32, C, heads, Dh int, neox bool, invFreq []float32, scale float32) {
	half := len(invFreq)
	if cap(b.ropeCS) < 2*half {
		b.ropeCS = make([]float32, 2*half)
	}
	cos, sin := b.ropeCS[:half], b.ropeCS[half:2*half]
	for t, p := range pos {
		if bias != nil {
			row := x[t*C : (t+1)*C]
			for j := range row {
				row[j] += bias[j]
			}
		}
		for i := range half {
			a := float64(p) * float64(invFreq[i])
			cos[i], sin[i] = float32(math.Cos(a))*scale, float32(math.Sin(a))*scale
		}
		for h := 0; h < heads; h++ {
			v := x[t*C+h*Dh : t*C+(h+1)*Dh]
			for i := range half {
				i0, i1 := 2*i, 2*i+1
				if neox {
					i0, i1 = i, i+half
				}
				x0, x1 := v[i0], v[i1]
				v[i0] = x0*cos[i] - x1*sin[i]
				v[i1] = x0*sin[i] + x1*cos[i]
			}
		}
	}
}

// CopyRows implements model.Backend.
// An i32 tensor's rows are copied as i32 (the pipelined decode step's
// token id, model.ForwardFrom).
func (b *Backend) CopyRows(dst, src model.Tensor, row0 int) {
	d, s := t(dst), t(src)
	C := s.cols()
	if s.dtype == loader.I32 {
		copy(d.i, s.i[row0*C:row0*C+len(d.i)])
		return
	}
	copy(d.f, s.f[row0*C:row0*C+len(d.f)])
}

// Argmax implements model.Backend.
func (b *Backend) Argmax(out, logits model.Tensor) {
	l := t(logits)
	Argmax(t(out).i, l.f, l.numel()/l.cols(), l.cols())
}

// MaskLogits implements model.LogitMasker.
func (b *Backend) MaskLogits(logits, mask model.Tensor) {
	l := t(logits)
	MaskLogits(l.f, t(mask).i, l.numel()/l.cols(), l.cols())
}

// TopK implements model.Backend.
func (b *Backend) TopK(ids, vals, logits model.Tensor, k int) {
	l := t(logits)
	topK(t(ids).i, t(vals).f, l.f, l.numel()/l.cols(), l.cols(), k)
}

// matmulTask computes rows [lo, hi) of out (T, N) = x (T, K) · wᵀ.
type matmulTask struct {
	out, x []float32
	w      *tensor
	T, N   int
	off    int // row offset of w (expert slices)
	buf    [][]float32
	// calls, when set, is scratch for running a quantised matmul as one
	// batch of SIMD kernel calls (js builds: one thread).
	calls *[]kcall
}

func (m *matmulTask) run(worker, lo, hi int) {
	K := len(m.x) / m.T
	w := m.w
	if m.calls != nil && w.dtype != loader.F32 && batchable(w, K) && (!m.rowsPath(worker, K) || simd.has(w.dtype)) {
		*m.calls = m.batch((*m.calls)[:0], worker, lo, hi)
		simd.batch(*m.calls)
		return
	}
	switch {
	case w.dtype == loader.F32:
		gemm(w.f[(m.off+lo)*K:(m.off+hi)*K], m.x, m.out[lo:], hi-lo, K, m.T, m.N)
	case m.rowsPath(worker, K):
		for r := range m.T {
			gemvRows(w, m.off+lo, m.x[r*K:(r+1)*K], m.out[r*m.N+lo:r*m.N+hi])
		}
	default:
		// Prefill: prefillTile rows dequantised at a time, then every
		// token against them.
		tile := m.buf[worker][:prefillTile*K]
		for n := lo; n < hi; n += prefillTile {
			rows := min(prefillTile, hi-n)
			dequantRows(w, m.off+n, rows, K, tile)
			gemm(tile[:rows*K], m.x, m.out[n:], rows, K, m.T, m.N)
		}
	}
}

// rowsPath reports whether run takes a row's dot product at a time
// (gemvRows) rather than dequantised tiles: decode, where the type reads
// its rows in place (decodeRows), or no tile buffer.
func (m *matmulTask) rowsPath(worker, K int) bool {
	return m.T < 4 && decodeRows(m.w) || len(m.buf[worker]) < prefillTile*K
}

// batch appends to calls the SIMD kernel calls that compute what
// run(worker, lo, hi) computes, in the same way (batchable(m.w, K) holds,
// and so does simd.has(m.w.dtype) when rowsPath does).
func (m *matmulTask) batch(calls []kcall, worker, lo, hi int) []kcall {
	K := len(m.x) / m.T
	w := m.w
	switch {
	case w.dtype == loader.F32:
		return append(calls, kcall{op: opF32, f: w.f[(m.off+lo)*K : (m.off+hi)*K], x: m.x, out: m.out[lo:], rows: hi - lo, K: K, T: m.T, ldo: m.N})
	case m.rowsPath(worker, K):
		for r := range m.T {
			calls = append(calls, kcall{op: opGemv, w: w, row: m.off + lo, rows: hi - lo, K: K, x: m.x[r*K : (r+1)*K], out: m.out[r*m.N+lo : r*m.N+hi]})
		}
		return calls
	}
	tile := m.buf[worker][:prefillTile*K]
	for n := lo; n < hi; n += prefillTile {
		rows := min(prefillTile, hi-n)
		calls = append(calls,
			kcall{op: opDequant, w: w, row: m.off + n, rows: rows, K: K, out: tile},
			kcall{op: opF32, f: tile[:rows*K], x: m.x, out: m.out[n:], rows: rows, K: K, T: m.T, ldo: m.N})
	}
	return calls
}

// prefillTile is the rows of a quantised weight dequantised at a time in
// prefill.
const prefillTile = 16

// gemmF32 sets out[t*ldo+r] = w[r] · x[t] for w (rows, K) and x (T, K),
// each in dotF32's order: the plain-Go twin of the SIMD f32 kernel. Four
// tokens go at a time, so a weight row is read once per four, and the
// rows are the inner loop, so the four tokens stay in cache while the
// (tile of) rows streams past.
func gemmF32(w, x, out []float32, rows, K, T, ldo int) {
	n := K &^ 3
	t := 0
	for ; t+4 <= T; t += 4 {
		x0, x1, x2, x3 := x[t*K:(t+1)*K], x[(t+1)*K:(t+2)*K], x[(t+2)*K:(t+3)*K], x[(t+3)*K:(t+4)*K]
		for r := 0; r < rows; r++ {
			wr := w[r*K : (r+1)*K]
			var a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, d1, d2, d3 float32
			for k := 0; k < n; k += 4 {
				w0, w1, w2, w3 := wr[k], wr[k+1], wr[k+2], wr[k+3]
				a0, a1, a2, a3 = a0+w0*x0[k], a1+w1*x0[k+1], a2+w2*x0[k+2], a3+w3*x0[k+3]
				b0, b1, b2, b3 = b0+w0*x1[k], b1+w1*x1[k+1], b2+w2*x1[k+2], b3+w3*x1[k+3]
				c0, c1, c2, c3 = c0+w0*x2[k], c1+w1*x2[k+1], c2+w2*x2[k+2], c3+w3*x2[k+3]
				d0, d1, d2, d3 = d0+w0*x3[k], d1+w1*x3[k+1], d2+w2*x3[k+2], d3+w3*x3[k+3]
			}
			for k := n; k < K; k++ {
				a0 += wr[k] * x0[k]
				b0 += wr[k] * x1[k]
				c0 += wr[k] * x2[k]
				d0 += wr[k] * x3[k]
			}
			out[t*ldo+r] = (a0 + a1) + (a2 + a3)
			out[(t+1)*ldo+r] = (b0 + b1) + (b2 + b3)
			out[(t+2)*ldo+r] = (c0 + c1) + (c2 + c3)
			out[(t+3)*ldo+r] = (d0 + d1) + (d2 + d3)
		}
	}
	for ; t < T; t++ {
		xt := x[t*K : (t+1)*K]
		for r := 0; r < rows; r++ {
			out[t*ldo+r] = dotF32(w[r*K:(r+1)*K], xt)
		}
	}
}

func (b *Backend) workerBufs(bufs *[][]float32, n int) {
	if len(*bufs) < b.pool.n {
		*bufs = make([][]float32, b.pool.n)
	}
	for i := range *bufs {
		if len((*bufs)[i]) < n {
			(*bufs)[i] = make([]float32, n)
		}
	}
}

// minWork is the fewest multiply-adds worth handing to another goroutine.
const minWork = 1 << 15

// rowGrain is the fewest output rows per parallel chunk for a (T, K) input.
func rowGrain(T, K int) int { return max(16, minWork/max(1, T*K)) }

// matmul sets out (T, N) = x (T, K) · wᵀ, across the ranks for a weight
// split across them.
func (b *Backend) matmul(out, x []float32, w *tensor, T, N, K int) {
	if w.shard != nil {
		b.matmulSharded(out, x, w, T, N, K)
		return
	}
	if w.stack != nil {
		b.matmulStack(out, x, w, T, N, K)
		return
	}
	b.workerBufs(&b.mm.buf, prefillTile*K)
	b.mm = matmulTask{out: out, x: x, w: w, T: T, N: N, buf: b.mm.buf, calls: &b.calls}
	b.pool.Run(&b.mm, N, rowGrain(T, K))
}

// attnTask runs attention for (token, head) pairs [lo, hi).
type attnTask struct {
	out, qkv  []float32
	pos       []int32
	kc, vc    []float32
	H, Hk, Dh int
	C         int  // qkv's row: (H+2Hk)*Dh, + H*Dh with the output gate
	gated     bool // the gate follows v
	window    int  // 0, or the keys each token attends to at most
	scores    [][]float32
	typed     *KVCache // an F16 or q8 cache (kc, vc nil), read by runTyped
	layer     int
}

func (a *attnTask) run(worker, lo, hi int) {
	if a.typed != nil {
		a.runTyped(worker, lo, hi)
		return
	}
	// The SIMD kernel reads rows of [q | k | v]: rows of queries alone (a
	// layer sharing another's KV, Gemma 4) take the loop below.
	if simd != nil && a.Dh%4 == 0 && !a.gated && a.C == (a.H+2*a.Hk)*a.Dh {
		simd.attn(a, worker, lo, hi)
		return
	}
	H, Hk, Dh, C := a.H, a.Hk, a.Dh, a.C
	kvw := Hk * Dh
	scale := float32(1 / math.Sqrt(float64(Dh)))
	for th := lo; th < hi; th++ {
		tk, h := th/H, th%H
		n := int(a.pos[tk]) + 1
		j0 := 0 // the first key attended to
		if a.window > 0 {
			j0 = max(0, n-a.window)
		}
		kh := h / (H / Hk)
		q := a.qkv[tk*C+h*Dh : tk*C+(h+1)*Dh]
		s := a.scores[worker][:n-j0]
		kc, vc := a.kc[j0*kvw:], a.vc[j0*kvw:]
		maxS := float32(math.Inf(-1))
		for j := range s {
			s[j] = dotF32(q, kc[j*kvw+kh*Dh:j*kvw+(kh+1)*Dh]) * scale
			maxS = max(maxS, s[j])
		}
		var sum float32
		for j := range s {
			s[j] = expf(s[j] - maxS)
			sum += s[j]
		}
		o := a.out[tk*H*Dh+h*Dh : tk*H*Dh+(h+1)*Dh]
		clear(o)
		inv := 1 / sum
		for j := range s {
			w := s[j] * inv
			v := vc[j*kvw+kh*Dh : j*kvw+(kh+1)*Dh]
			for d := range o {
				o[d] += w * v[d]
			}
		}
		if a.gated {
			g := a.qkv[tk*C+(H+2*Hk)*Dh+h*Dh:]
			for d := range o {
				o[d] /= 1 + expf(-g[d])
			}
		}
	}
}

// Attend implements model.Backend.
func (b *Backend) Attend(out, qkv, pos model.Tensor, cache model.KVCache, layer, window int, gated bool) {
	c := cache.(*KVCache)
	q, p := t(qkv), t(pos)
	Hk, Dh := c.kvHeads, c.head
	H := t(out).cols() / Dh
	var kc, vc []float32
	var typed *KVCache
	if c.dtype == loader.F32 {
		kc, vc = c.K[layer], c.V[layer]
	} else {
		typed = c
	}
	b.workerBufs(&b.attn.scores, c.capacity)
	b.attn = attnTask{out: t(out).f, qkv: q.f, pos: p.i, kc: kc, vc: vc, H: H, Hk: Hk, Dh: Dh, C: q.cols(), gated: gated, window: window, scores: b.attn.scores, typed: typed, layer: layer}
	keys := int(p.i[len(p.i)-1] + 1)
	if window > 0 {
		keys = min(keys, window)
	}
	work := keys * Dh * 2
	b.pool.Run(&b.attn, len(p.i)*H, max(1, minWork/work))
}

// runTyped is run over an F16 or q8 cache: the same loop, each key's dot
// and each value's sum read in the cache's type (KVCache.kvDot, kvAdd).
func (a *attnTask) runTyped(worker, lo, hi int) {
	H, Hk, Dh, C := a.H, a.Hk, a.Dh, a.C
	c := a.typed
	scale := float32(1 / math.Sqrt(float64(Dh)))
	for th := lo; th < hi; th++ {
		tk, h := th/H, th%H
		n := int(a.pos[tk]) + 1
		j0 := 0
		if a.window > 0 {
			j0 = max(0, n-a.window)
		}
		kh := h / (H / Hk)
		q := a.qkv[tk*C+h*Dh : tk*C+(h+1)*Dh]
		s := a.scores[worker][:n-j0]
		maxS := float32(math.Inf(-1))
		for j := range s {
			s[j] = c.kvDot(a.layer, j0+j, kh, q) * scale
			maxS = max(maxS, s[j])
		}
		var sum float32
		for j := range s {
			s[j] = expf(s[j] - maxS)
			sum += s[j]
		}
		o := a.out[tk*H*Dh+h*Dh : tk*H*Dh+(h+1)*Dh]
		clear(o)
		inv := 1 / sum
		for j := range s {
			c.kvAdd(o, s[j]*inv, a.layer, j0+j, kh)
		}
		if a.gated {
			g := a.qkv[tk*C+(H+2*Hk)*Dh+h*Dh:]
			for d := range o {
				o[d] /= 1 + expf(-g[d])
			}
		}
	}
}
