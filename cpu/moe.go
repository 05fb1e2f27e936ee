package cpu

import (
	"wasmllm/model"
)

// moeTask runs a prompt's experts grouped by expert, as llama.cpp's
// mul_mat_id does: expert e takes the (token, slot) pairs routed to it,
// order[start[e]:start[e+1]] (pair p = token·A + slot), as one matmul of
// that many rows through gate_up, SiLU and down, each worker with its own
// buffers, and leaves each pair's output in ys. The weighted sum per token
// then runs in slot order, as for a single token. For a single token the
// experts' rows are split instead (moeSingle).
type moeTask struct {
	out, x            []float32
	gateUp, down      *tensor
	gelu              bool      // GeGLU experts, not SiluMul
	ids               []int32   // (T, A)
	weights           []float32 // (T, A)
	D, F, A           int
	order, start      []int32
	next              []int32   // group's cursors, one per expert
	ys                []float32 // (T·A, D)
	sorted            []float32 // batched: the experts' outputs in order's order
	calls             []kcall   // batched: the experts' kernel calls
	xs, gu, act, tile [][]float32
	logits, probBuf   []float32
}

func (m *moeTask) run(worker, lo, hi int) {
	D, F := m.D, m.F
	for e := lo; e < hi; e++ {
		pairs := m.order[m.start[e]:m.start[e+1]]
		c := len(pairs)
		if c == 0 {
			continue
		}
		xs, gu, act := m.xs[worker][:c*D], m.gu[worker][:c*2*F], m.act[worker][:c*F]
		for i, p := range pairs {
			tk := int(p) / m.A
			copy(xs[i*D:(i+1)*D], m.x[tk*D:(tk+1)*D])
		}
		mm := matmulTask{out: gu, x: xs, w: m.gateUp, T: c, N: 2 * F, off: e * 2 * F, buf: m.tile}
		mm.run(worker, 0, 2*F)
		m.activate(act, gu, c, F)
		y := xs // the gathered rows are spent: down's output goes there
		mm = matmulTask{out: y, x: act, w: m.down, T: c, N: D, off: e * D, buf: m.tile}
		mm.run(worker, 0, D)
		for i, p := range pairs {
			copy(m.ys[int(p)*D:(int(p)+1)*D], y[i*D:(i+1)*D])
		}
	}
}

// activate is the experts' activation: out (T, F) = SiluMul, or GeluMul
// for GeGLU experts, of gateUp (T, 2F).
func (m *moeTask) activate(out, gateUp []float32, T, F int) {
	if m.gelu {
		geluMul(out, gateUp, T, F)
		return
	}
	siluMul(out, gateUp, T, F)
}

// group fills order and start from ids (a counting sort by expert,
// stable in pair order) and returns the most pairs any expert has.
func (m *moeTask) group(E int) int {
	start := m.start[:E+1]
	clear(start)
	for _, e := range m.ids {
		start[e+1]++
	}
	most := 0
	for e := range E {
		most = max(most, int(start[e+1]))
		start[e+1] += start[e]
	}
	cursor := m.next[:E]
	copy(cursor, start[:E])
	for p, e := range m.ids {
		m.order[cursor[e]] = int32(p)
		cursor[e]++
	}
	return most
}

// moeOut sets out = MoE(x), the sparse MLP of x (T, D) routed by xr (x,
// or the router's own input) without the norm and the residual add, each
// expert GeGLU with gelu and its output times scale[e] when scale is not
// nil (MoE's reference says the order).
func (b *Backend) moeOut(out, x, xr, router, gateUp, down model.Tensor, topK int, norm, gelu bool, scale []float32) {
	o, xt, rt := t(out), t(x), t(router)
	gt, dt := t(gateUp), t(down)
	T, D := xt.shape[0], xt.cols()
	E, F := rt.shape[0], dt.cols()
	m := &b.moe
	if cap(m.ids) < T*topK {
		m.ids = make([]int32, T*topK)
		m.weights = make([]float32, T*topK)
	}
	if cap(m.logits) < T*E {
		m.logits = make([]float32, T*E)
	}
	ids, weights, logits := m.ids[:T*topK], m.weights[:T*topK], m.logits[:T*E]
	b.matmul(logits, t(xr).f, rt, T, E, D)
	if cap(m.probBuf) < E {
		m.probBuf = make([]float32, E)
	}
	for tk := 0; tk < T; tk++ {
		w := weights[tk*topK : (tk+1)*topK]
		route(logits[tk*E:(tk+1)*E], topK, norm, ids[tk*topK:(tk+1)*topK], w, m.probBuf[:E])
		if scale != nil {
			for a, e := range ids[tk*topK : (tk+1)*topK] {
				w[a] *= scale[e]
			}
		}
	}
	*m = moeTask{out: o.f, x: xt.f, gateUp: gt, down: dt, gelu: gelu, ids: ids, weights: weights, D: D, F: F, A: topK,
		order: m.order, start: m.start, next: m.next, ys: m.ys, sorted: m.sorted, calls: m.calls, xs: m.xs, gu: m.gu, act: m.act, tile: m.tile, logits: m.logits, probBuf: m.probBuf}
	if T == 1 {
		b.workerBufs(&m.gu, 2*F)
		b.workerBufs(&m.act, F)
		b.workerBufs(&m.xs, D)
		b.moeSingle(m)
		return
	}
	if cap(m.order) < T*topK {
		m.order = make([]int32, T*topK)
	}
	if cap(m.ys) < T*topK*D {
		m.ys = make([]float32, T*topK*D)
	}
	if cap(m.start) < E+1 {
		m.start, m.next = make([]int32, E+1), make([]int32, E)
	}
	m.order, m.ys = m.order[:T*topK], m.ys[:T*topK*D]
	most := m.group(E)
	if batchable(gt, D) && batchable(dt, F) {
		b.moeBatched(m, E)
	} else {
		b.workerBufs(&m.xs, most*D)
		b.workerBufs(&m.gu, most*2*F)
		b.workerBufs(&m.act, most*F)
		b.workerBufs(&m.tile, prefillTile*max(D, F))
		b.pool.Run(m, E, max(1, minWork*E/max(1, T*topK*3*F*D)))
	}
	for tk := range T {
		o := m.out[tk*D : (tk+1)*D]
		clear(o)
		for a := range topK {
			w, y := m.weights[tk*topK+a], m.ys[(tk*topK+a)*D:(tk*topK+a+1)*D]
			for i := range o {
				o[i] += w * y[i]
			}
		}
	}
}

// moeBatched is moeTask.run over every expert on the SIMD kernels, in
// one call into the module for all the experts' gate_up and one for their
// down (a call costs about as much as a small expert's matmul): the pairs'
// rows gathered in order's order, each expert's matmul the batch of
// kernel calls matmulTask.run would make, the SiLU over them all. Each
// value is computed as moeTask.run computes it, so the bits are the same.
func (b *Backend) moeBatched(m *moeTask, E int) {
	D, F, P := m.D, m.F, len(m.order)
	b.workerBufs(&m.xs, P*D)
	b.workerBufs(&m.gu, P*2*F)
	b.workerBufs(&m.act, P*F)
	b.workerBufs(&m.tile, prefillTile*max(D, F))
	if cap(m.sorted) < P*D {
		m.sorted = make([]float32, P*D)
	}
	xs, gu, act, ys := m.xs[0][:P*D], m.gu[0][:P*2*F], m.act[0][:P*F], m.sorted[:P*D]
	for r, p := range m.order {
		tk := int(p) / m.A
		copy(xs[r*D:(r+1)*D], m.x[tk*D:(tk+1)*D])
	}
	batch := func(w *tensor, N, K int, x, out []float32) {
		m.calls = m.calls[:0]
		for e := range E {
			s, c := int(m.start[e]), int(m.start[e+1]-m.start[e])
			if c > 0 {
				mm := matmulTask{out: out[s*N : (s+c)*N], x: x[s*K : (s+c)*K], w: w, T: c, N: N, off: e * N, buf: m.tile}
				m.calls = mm.batch(m.calls, 0, 0, N)
			}
		}
		simd.batch(m.calls)
	}
	batch(m.gateUp, 2*F, D, xs, gu)
	m.activate(act, gu, P, F)
	batch(m.down, D, F, act, ys)
	for r, p := range m.order {
		copy(m.ys[int(p)*D:(int(p)+1)*D], ys[r*D:(r+1)*D])
	}
}

// moeSingle runs one token's experts with each expert's rows split across
// workers.
func (b *Backend) moeSingle(m *moeTask) {
	D, F := m.D, m.F
	o := m.out[:D]
	clear(o)
	gu, act, y := m.gu[0][:2*F], m.act[0][:F], m.xs[0][:D]
	for a := 0; a < m.A; a++ {
		e := int(m.ids[a])
		b.mm = matmulTask{out: gu, x: m.x[:D], w: m.gateUp, T: 1, N: 2 * F, off: e * 2 * F, buf: b.mm.buf}
		b.pool.Run(&b.mm, 2*F, rowGrain(1, D))
		m.activate(act, gu, 1, F)
		b.mm = matmulTask{out: y, x: act, w: m.down, T: 1, N: D, off: e * D, buf: b.mm.buf}
		b.pool.Run(&b.mm, D, rowGrain(1, F))
		w := m.weights[a]
		for i := range o {
			o[i] += w * y[i]
		}
	}
}

// route is Route with caller-provided scratch, in f32 like llama.cpp.
func route(logits []float32, k int, norm bool, ids []int32, weights []float32, probs []float32) {
	maxL := logits[0]
	for _, v := range logits {
		maxL = max(maxL, v)
	}
	var sum float32
	for e, v := range logits {
		probs[e] = expf(v - maxL)
		sum += probs[e]
	}
	topK(ids, weights, probs, 1, len(probs), k)
	var total float32
	for a := range weights {
		weights[a] /= sum
		total += weights[a]
	}
	if norm {
		for a := range weights {
			weights[a] /= total
		}
	}
}
