package cpu

import (
	"wasmllm/loader"
	"wasmllm/model"
)

// fusedBufs are the scratch activations of the fused ops.
type fusedBufs struct {
	xn, y            []float32
	xr, an           []float32 // MoE's router input (MoEFusion.RouterNorm); AddNorm's normalised rows
	shGU, shAct, shY []float32 // the shared expert's
}

// scratchF32 is an f32 activation of shape over *buf, grown as needed.
func scratchF32(buf *[]float32, shape ...int) *tensor {
	x := &tensor{shape: shape, dtype: loader.F32}
	n := x.numel()
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	x.f = (*buf)[:n]
	return x
}

// MatMul implements model.Backend: RMSNorm into a scratch, the product,
// then SiluMul or GeluMul, the post-norm, the soft-cap and the add, as the
// reference of the same name.
func (b *Backend) MatMul(out, x, w model.Tensor, f model.MatMulFusion) {
	o, xt, wt := t(out), t(x), t(w)
	T, K, N := xt.numel()/xt.cols(), xt.cols(), wt.shape[0]
	in := xt.f
	if f.Norm != nil {
		xn := scratchF32(&b.fused.xn, T, K)
		rmsNorm(xn.f, xt.f, t(f.Norm).f, f.Eps)
		in = xn.f
	}
	gated := f.SiluMul || f.GeluMul
	epilogue := f.PostNorm != nil || f.SoftCap > 0 || f.Scale != 0
	if !gated && !f.Add && !epilogue {
		b.matmul(o.f, in, wt, T, N, K)
		return
	}
	y := scratchF32(&b.fused.y, T, N)
	b.matmul(y.f, in, wt, T, N, K)
	if gated {
		dst := scratchF32(&b.fused.xn, T, N/2)
		if !f.Add && !epilogue {
			dst = o
		}
		if f.SiluMul {
			siluMul(dst.f, y.f, T, N/2)
		} else {
			geluMul(dst.f, y.f, T, N/2)
		}
		if dst == o {
			return
		}
		y = dst
	}
	if f.Scale != 0 {
		Scale(y.f, f.Scale)
	}
	if f.PostNorm != nil {
		postNorm(y.f, t(f.PostNorm).f, f.PostNormGroup, f.Eps)
	}
	if c := f.SoftCap; c > 0 {
		for i, v := range y.f {
			y.f[i] = SoftCap(v, c)
		}
	}
	if !f.Add {
		copy(o.f, y.f)
		return
	}
	for i, v := range y.f {
		o.f[i] += v
	}
}

// GeluGate implements model.Backend.
func (b *Backend) GeluGate(out, gate, src model.Tensor, col0 int) {
	o, g, sr := t(out), t(gate), t(src)
	P := o.cols()
	GeluGate(o.f, g.f, sr.f, o.numel()/P, P, sr.cols(), col0)
}

// Scale implements model.Backend.
func (b *Backend) Scale(x model.Tensor, s float32) { Scale(t(x).f, s) }

// geluMul is GeluMul: out (T, F) = gelu_tanh(gateUp[:, :F]) · gateUp[:, F:].
func geluMul(out, gateUp []float32, T, F int) { geluMulRef(out, gateUp, T, F) }

// RoPEKV implements model.Backend.
func (b *Backend) RoPEKV(qkv, pos, bias, qw, kw model.Tensor, heads, kvHeads int, eps float32, r *model.RoPE, cache model.KVCache, layer int) {
	q, p := t(qkv), t(pos)
	c := cache.(*KVCache)
	if qw != nil {
		qkNorm(q.f, t(qw).f, t(kw).f, q.shape[0], heads-kvHeads, kvHeads, c.head, q.cols(), eps)
	}
	var bv []float32
	if bias != nil {
		bv = t(bias).f
	}
	b.rope(q.f, p.i, bv, q.cols(), heads, c.head, r.NeoX, r.InvFreq, r.CosSinScale())
	if kvHeads > 0 {
		b.writeKV(q, p, c, layer, heads-kvHeads)
	}
}

// writeKV stores the keys and values of qkv (whose first H heads are the
// queries) into layer's cache at pos, in the cache's type.
func (b *Backend) writeKV(q, p *tensor, c *KVCache, layer, H int) {
	Hk, Dh := c.kvHeads, c.head
	C := q.cols()
	for r, ps := range p.i {
		row := q.f[r*C:]
		c.store(layer, int(ps), row[H*Dh:(H+Hk)*Dh], row[(H+Hk)*Dh:(H+2*Hk)*Dh])
	}
}

// MoE implements model.Backend.
func (b *Backend) MoE(res, norm model.Tensor, eps float32, router, gateUp, down model.Tensor, topK int, normTopK bool, f model.MoEFusion) {
	rt := t(res)
	T, D := rt.numel()/rt.cols(), rt.cols()
	xn := scratchF32(&b.fused.xn, T, D)
	rmsNorm(xn.f, rt.f, t(norm).f, eps)
	xr := xn
	if f.RouterNorm != nil {
		xr = scratchF32(&b.fused.xr, T, D)
		rmsNorm(xr.f, rt.f, t(f.RouterNorm).f, eps)
	}
	var scale []float32
	if f.ExpertScale != nil {
		scale = t(f.ExpertScale).f
	}
	y := scratchF32(&b.fused.y, T, D)
	b.moeOut(y, xn, xr, router, gateUp, down, topK, normTopK, f.GeluMul, scale)
	dst := rt.f
	if f.Out != nil {
		dst = t(f.Out).f
	}
	if f.PostNorm != nil { // the sum, shared expert included, normalised before the add
		if f.Shared.GateUp != nil {
			b.sharedExpert(y.f, xn.f, f.Shared, T, D)
		}
		postNorm(y.f, t(f.PostNorm).f, 0, eps)
		for i, v := range y.f {
			dst[i] += v
		}
		return
	}
	for i, v := range y.f {
		dst[i] += v
	}
	if f.Shared.GateUp != nil {
		b.sharedExpert(dst, xn.f, f.Shared, T, D)
	}
}

// AddNorm implements model.Backend.
func (b *Backend) AddNorm(out, x, w model.Tensor, eps float32) {
	o, xt := t(out), t(x)
	y := scratchF32(&b.fused.an, xt.shape...)
	rmsNorm(y.f, xt.f, t(w).f, eps)
	for i, v := range y.f {
		o.f[i] += v
	}
}

// sharedExpert adds the shared expert of the normalised rows xn (T, D) to
// res: sigmoid(x·gate) · down(SiluMul(gate_up · x)), as MoE's reference.
func (b *Backend) sharedExpert(res, xn []float32, sh model.SharedExpert, T, D int) {
	gu, dn, gate := t(sh.GateUp), t(sh.Down), t(sh.Gate)
	F := dn.cols()
	sf := &b.fused
	if cap(sf.shGU) < T*2*F {
		sf.shGU = make([]float32, T*2*F)
	}
	if cap(sf.shAct) < T*F {
		sf.shAct = make([]float32, T*F)
	}
	if cap(sf.shY) < T*D {
		sf.shY = make([]float32, T*D)
	}
	g, act, y := sf.shGU[:T*2*F], sf.shAct[:T*F], sf.shY[:T*D]
	b.matmul(g, xn, gu, T, 2*F, D)
	siluMul(act, g, T, F)
	b.matmul(y, act, dn, T, D, F)
	for tk := range T {
		scale := 1 / (1 + expf(-dotF32(xn[tk*D:(tk+1)*D], gate.f)))
		r, yt := res[tk*D:(tk+1)*D], y[tk*D:(tk+1)*D]
		for i := range r {
			r[i] += scale * yt[i]
		}
	}
}
