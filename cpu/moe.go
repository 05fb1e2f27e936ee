package cpu

import "wasmllm/model"

// moeTask runs the experts of tokens [lo, hi), each worker with its own
// buffers. For a single token the experts' rows are split instead.
type moeTask struct {
	out, x          []float32
	gateUp, down    *tensor
	ids             []int32   // (T, A)
	weights         []float32 // (T, A)
	D, F, A         int
	gu, act, y      [][]float32
	logits, probBuf []float32
}

func (m *moeTask) run(worker, lo, hi int) {
	D, F, A := m.D, m.F, m.A
	gu, act, y := m.gu[worker][:2*F], m.act[worker][:F], m.y[worker][:D]
	for tk := lo; tk < hi; tk++ {
		x := m.x[tk*D : (tk+1)*D]
		o := m.out[tk*D : (tk+1)*D]
		clear(o)
		for a := 0; a < A; a++ {
			e := int(m.ids[tk*A+a])
			gemvRows(m.gateUp, e*2*F, x, gu)
			SiluMul(act, gu, 1, F)
			gemvRows(m.down, e*D, act, y)
			w := m.weights[tk*A+a]
			for i := range o {
				o[i] += w * y[i]
			}
		}
	}
}

// MoE implements model.Backend.
func (b *Backend) MoE(out, x, router, gateUp, down model.Tensor, topK int, norm bool) {
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
	b.matmul(logits, xt.f, rt, T, E, D)
	if cap(m.probBuf) < E {
		m.probBuf = make([]float32, E)
	}
	for tk := 0; tk < T; tk++ {
		route(logits[tk*E:(tk+1)*E], topK, norm, ids[tk*topK:(tk+1)*topK], weights[tk*topK:(tk+1)*topK], m.probBuf[:E])
	}
	b.workerBufs(&m.gu, 2*F)
	b.workerBufs(&m.act, F)
	b.workerBufs(&m.y, D)
	*m = moeTask{out: o.f, x: xt.f, gateUp: gt, down: dt, ids: ids, weights: weights, D: D, F: F, A: topK,
		gu: m.gu, act: m.act, y: m.y, logits: m.logits, probBuf: m.probBuf}
	if T > 1 {
		b.pool.Run(m, T, max(1, minWork/(topK*3*F*D)))
		return
	}
	b.moeSingle(m)
}

// moeSingle runs one token's experts with each expert's rows split across
// workers.
func (b *Backend) moeSingle(m *moeTask) {
	D, F := m.D, m.F
	o := m.out[:D]
	clear(o)
	gu, act, y := m.gu[0][:2*F], m.act[0][:F], m.y[0][:D]
	for a := 0; a < m.A; a++ {
		e := int(m.ids[a])
		b.mm = matmulTask{out: gu, x: m.x[:D], w: m.gateUp, T: 1, N: 2 * F, off: e * 2 * F, buf: b.mm.buf}
		b.pool.Run(&b.mm, 2*F, rowGrain(1, D))
		SiluMul(act, gu, 1, F)
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
