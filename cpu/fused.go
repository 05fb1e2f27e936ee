package cpu

import (
	"wasmllm/loader"
	"wasmllm/model"
)

var _ model.Fuser = (*Backend)(nil)

// fusedBufs are the scratch activations of the fused ops.
type fusedBufs struct{ xn, y []float32 }

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

// FusedMatMul implements model.Fuser as the composition of RMSNorm,
// MatMul, SiluMul and an add (see the reference of the same name).
func (b *Backend) FusedMatMul(out, x, w model.Tensor, f model.MatMulFusion) {
	o, xt, wt := t(out), t(x), t(w)
	T, K, N := xt.numel()/xt.cols(), xt.cols(), wt.shape[0]
	in := model.Tensor(xt)
	if f.Norm != nil {
		xn := scratchF32(&b.fused.xn, T, K)
		b.RMSNorm(xn, xt, f.Norm, f.Eps)
		in = xn
	}
	y := scratchF32(&b.fused.y, T, N)
	b.MatMul(y, in, wt)
	if f.SiluMul {
		if !f.Add {
			b.SiluMul(o, y)
			return
		}
		act := scratchF32(&b.fused.xn, T, N/2)
		b.SiluMul(act, y)
		y = act
	}
	for i, v := range y.f {
		if f.Add {
			o.f[i] += v
		} else {
			o.f[i] = v
		}
	}
}

// RoPEKV implements model.Fuser.
func (b *Backend) RoPEKV(qkv, pos, bias, qw, kw model.Tensor, heads, kvHeads int, eps float32, r *model.RoPE, cache model.KVCache, layer int) {
	if qw != nil {
		b.QKNorm(qkv, qw, kw, heads-kvHeads, kvHeads, eps)
	}
	b.RoPE(qkv, pos, bias, heads, r)
	b.writeKV(t(qkv), t(pos), cache.(*KVCache), layer)
}

// writeKV stores the keys and values of qkv into layer's cache at pos.
func (b *Backend) writeKV(q, p *tensor, c *KVCache, layer int) {
	Hk, Dh := c.kvHeads, c.head
	H := q.cols()/Dh - 2*Hk
	C := q.cols()
	kvw := Hk * Dh
	kc, vc := c.K[layer], c.V[layer]
	for r, ps := range p.i {
		row := q.f[r*C:]
		copy(kc[int(ps)*kvw:(int(ps)+1)*kvw], row[H*Dh:(H+Hk)*Dh])
		copy(vc[int(ps)*kvw:(int(ps)+1)*kvw], row[(H+Hk)*Dh:C])
	}
}

// AttendCached implements model.Fuser.
func (b *Backend) AttendCached(out, qkv, pos model.Tensor, cache model.KVCache, layer, window int) {
	b.attend(out, qkv, pos, cache, layer, window, false)
}

// MoEAdd implements model.Fuser.
func (b *Backend) MoEAdd(res, norm model.Tensor, eps float32, router, gateUp, down model.Tensor, topK int, normTopK bool) {
	rt := t(res)
	T, D := rt.numel()/rt.cols(), rt.cols()
	xn := scratchF32(&b.fused.xn, T, D)
	b.RMSNorm(xn, rt, norm, eps)
	y := scratchF32(&b.fused.y, T, D)
	b.MoE(y, xn, router, gateUp, down, topK, normTopK)
	for i, v := range y.f {
		rt.f[i] += v
	}
}
