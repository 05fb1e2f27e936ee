//go:build js

package gpu

import (
	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// fusedState holds the fallbacks' scratch buffers (MatMul where the GEMV
// cannot fuse: prefill batches, split gate_up weights).
type fusedState struct{ xn, gu *webgpu.Buffer }

// scratchAct is an f32 activation of shape over the scratch buffer *slot.
func (b *Backend) scratchAct(slot **webgpu.Buffer, label string, shape ...int) *tensor {
	t := &tensor{shape: shape, dtype: loader.F32}
	buf := b.scratch(slot, label, uint64(4*t.numel()))
	if buf == nil {
		return nil
	}
	t.buf = buf
	return t
}

// MatMul implements model.Backend. Decode batches (the GEMV path) run as
// one matmul_gemv dispatch per row-part of w with the norm, SiluMul and add
// fused; otherwise (prefill, K-quant weights) their kernels run in turn
// (RMSNorm into a scratch, the GEMM or K-quant kernel adding to out, gate_up
// into a scratch and SiluMul).
func (b *Backend) MatMul(out, x, w model.Tensor, f model.MatMulFusion) {
	o, xt, wt := tt(out), tt(x), tt(w)
	N, K := wt.rows(), wt.cols()
	T := xt.rows()
	cols := N
	if f.SiluMul || f.GeluMul {
		cols = N / 2
	}
	var nw *tensor
	if f.Norm != nil {
		nw = tt(f.Norm)
		if len(nw.parts) == 0 || nw.dtype != loader.F32 || nw.numel() != K {
			b.opErr("MatMul", "norm weight %v %v: want (%d) f32", nw.dtype, nw.shape, K)
			return
		}
	}
	switch {
	case len(wt.parts) == 0 || xt.buf == nil || o.buf == nil || xt.dtype != loader.F32 || o.dtype != loader.F32:
		b.opErr("MatMul", "want f32 activations x %v, out %v and an uploaded weight %v", xt.shape, o.shape, wt.shape)
		return
	case xt.cols() != K || o.cols() != cols || o.rows() != T || ((f.SiluMul || f.GeluMul) && N%2 != 0):
		b.opErr("MatMul", "out %v, x %v, weight %v (silu %v, gelu %v) do not agree", o.shape, xt.shape, wt.shape, f.SiluMul, f.GeluMul)
		return
	case f.SiluMul && f.GeluMul:
		b.opErr("MatMul", "both SiluMul and GeluMul")
		return
	case o.buf == xt.buf:
		b.opErr("MatMul", "out and x are the same tensor")
		return
	case (wt.dtype == loader.Q8 || wt.dtype == loader.Q4) && K%32 != 0:
		b.opErr("MatMul", "%s weight %v: K not a multiple of 32", wt.dtype, wt.shape)
		return
	case kquantWeight(wt.dtype) && K%256 != 0:
		b.opErr("MatMul", "%s weight %v: K not a multiple of 256", wt.dtype, wt.shape)
		return
	}
	if T == 0 || N == 0 {
		return
	}
	if f.GeluMul || f.PostNorm != nil || f.SoftCap > 0 || f.Scale != 0 {
		b.matmulEpilogue(o, xt, wt, T, N, f)
		return
	}
	if wt.stack != nil {
		b.matmulStack(o, xt, wt, T, N, K, nw, f)
		return
	}
	kq := kquantWeight(wt.dtype) // K-quant blocks: their own kernels, unfused (backend_kquant_js.go)
	gemv := !kq && T <= b.tune.gemvMaxT() && K%gemvChunk(wt.dtype) == 0
	if gemv && (!f.SiluMul || len(wt.parts) == 1) {
		b.gemvFused(o, xt, wt, T, N, K, b.tune.gemvShape(wt.dtype, T, K),
			gemvFusion{norm: nw, eps: f.Eps, silu: f.SiluMul, acc: f.Add})
		return
	}
	in := xt
	if nw != nil {
		if in = b.scratchAct(&b.ops.fused.xn, "fused norm", T, K); in == nil {
			return
		}
		b.rmsNorm(in, xt, nw, f.Eps)
	}
	if !f.SiluMul {
		if kq {
			b.matmulKQuant(o, in, wt, T, N, K, f.Add)
		} else if gemv {
			b.gemvFused(o, in, wt, T, N, K, b.tune.gemvShape(wt.dtype, T, K), gemvFusion{acc: f.Add})
		} else {
			b.gemmAcc(o, in, wt, T, N, K, f.Add)
		}
		return
	}
	if f.Add {
		b.opErr("MatMul", "SiluMul with Add is not fused")
		return
	}
	gu := b.scratchAct(&b.ops.fused.gu, "fused gate_up", T, N)
	if gu == nil {
		return
	}
	b.MatMul(gu, in, wt, model.MatMulFusion{})
	b.siluMul(o, gu)
}

// RoPEKV implements model.Backend: one rope_kv dispatch.
func (b *Backend) RoPEKV(qkv, pos, bias, qw, kw model.Tensor, heads, kvHeads int, eps float32, r *model.RoPE, cache model.KVCache, layer int) {
	c := b.cacheOf("RoPEKV", cache, layer)
	if c == nil {
		return
	}
	xt, pt := tt(qkv), tt(pos)
	Dh := c.headDim
	// a row is [q | k | v], or [q | k | v | gate] with an output gate
	plain, gated := (heads+kvHeads)*Dh, 2*heads*Dh // (H+2Hk)*Dh, (2H+2Hk)*Dh
	if r.Dim < 2 || r.Dim > Dh || r.Dim%2 != 0 || len(r.InvFreq) != r.Dim/2 || Dh > maxHeadDim || xt.buf == nil || xt.dtype != loader.F32 ||
		(xt.cols() != plain && xt.cols() != gated) || (kvHeads != c.kvHeads && kvHeads != 0) || heads <= kvHeads {
		b.opErr("RoPEKV", "qkv %v with %d rotated heads and %d kv heads of %d (rope dim %d, %d frequencies); the cache has %d heads of %d",
			xt.shape, heads, kvHeads, Dh, r.Dim, len(r.InvFreq), c.kvHeads, Dh)
		return
	}
	if pt.buf == nil || pt.dtype != loader.I32 || pt.numel() != xt.rows() {
		b.opErr("RoPEKV", "pos %s %v: want (%d) i32", pt.dtype, pt.shape, xt.rows())
		return
	}
	freq := b.ropeFreqs(r)
	if freq == nil {
		return
	}
	k, err := use(b, kRoPEKV, constant{"KV_F16", c.f16()}, constant{"KV_Q8", c.q8()})
	if err != nil {
		b.fail(err)
		return
	}
	prm := ropeKVParams{Row: uint32(xt.cols()), Heads: uint32(heads), KVHeads: uint32(kvHeads), Half: uint32(Dh / 2), Eps: eps, Cap: uint32(c.capacity), Rot: uint32(r.Dim / 2), Scale: r.CosSinScale()}
	if r.NeoX {
		prm.NeoX = 1
	}
	bb, qb, kb := bind{buf: b.dummy}, bind{buf: b.dummy}, bind{buf: b.dummy}
	if bias != nil {
		bt := tt(bias)
		if bt.numel() != xt.cols() || bt.dtype != loader.F32 || len(bt.parts) == 0 {
			b.opErr("RoPEKV", "bias of %d %v values for rows of %d (want f32)", bt.numel(), bt.dtype, xt.cols())
			return
		}
		prm.Bias, bb = 1, bind{buf: bt.parts[0].data}
	}
	if qw != nil {
		qt, kt := tt(qw), tt(kw)
		if qt.numel() != Dh || kt.numel() != Dh || len(qt.parts) == 0 || len(kt.parts) == 0 {
			b.opErr("RoPEKV", "q/k norm weights %v, %v: want (%d)", qt.shape, kt.shape, Dh)
			return
		}
		prm.Norm, qb, kb = 1, bind{buf: qt.parts[0].data}, bind{buf: kt.parts[0].data}
	}
	k.dispatch(b, prm, heads+kvHeads, xt.rows(), 1,
		xt.whole(), pt.whole(), bind{buf: freq}, bb, qb, kb, bind{buf: c.k[layer]}, bind{buf: c.v[layer]})
}
