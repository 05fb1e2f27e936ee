//go:build js

package gpu

import (
	"math"

	"wasmllm/loader"
	"wasmllm/model"
)

var _ model.EncoderOps = (*Backend)(nil)

// vec returns the binding of a (n) f32 vector: a weight's first part or an
// activation; ok is false (and the op failed) when t is not one.
func (b *Backend) vec(op string, t model.Tensor, n int) (bind, bool) {
	v := tt(t)
	if v.numel() != n || v.dtype != loader.F32 {
		b.opErr(op, "vector %s %v: want (%d) f32", v.dtype, v.shape, n)
		return bind{}, false
	}
	if v.buf != nil {
		return v.whole(), true
	}
	if len(v.parts) != 1 {
		b.opErr(op, "vector %v in %d parts", v.shape, len(v.parts))
		return bind{}, false
	}
	return bind{buf: v.parts[0].data}, true
}

// AddBias implements model.EncoderOps.
func (b *Backend) AddBias(x, bias model.Tensor, gelu bool) {
	xt := tt(x)
	bb, ok := b.vec("AddBias", bias, xt.cols())
	if !ok {
		return
	}
	n := xt.numel()
	p := addBiasParams{N: uint32(xt.cols()), Count: uint32(n)}
	if gelu {
		p.Gelu = 1
	}
	gx, gy := b.groups2D((n + 63) / 64)
	op(b, kAddBias).dispatch(b, p, gx, gy, 1, xt.whole(), bb)
}

// LayerNorm implements model.EncoderOps.
func (b *Backend) LayerNorm(x, add, w, bias model.Tensor, eps float32) {
	xt := tt(x)
	D := xt.cols()
	wb, ok := b.vec("LayerNorm", w, D)
	if !ok {
		return
	}
	bb, ok := b.vec("LayerNorm", bias, D)
	if !ok {
		return
	}
	p := layerNormParams{D: uint32(D), Rows: uint32(xt.rows()), Eps: eps}
	ab := bind{buf: b.dummy}
	if add != nil {
		at := tt(add)
		if at.numel() != xt.numel() {
			b.opErr("LayerNorm", "add %v for x %v", at.shape, xt.shape)
			return
		}
		p.Add, ab = 1, at.whole()
	}
	gx, gy := b.groups2D(xt.rows())
	op(b, kLayerNorm).dispatch(b, p, gx, gy, 1, xt.whole(), ab, wb, bb)
}

// Rope implements model.EncoderOps.
func (b *Backend) Rope(x, pos, qw, kw model.Tensor, heads, kvHeads, headDim int, eps float32, r *model.RoPE) {
	xt, pt := tt(x), tt(pos)
	n := heads + kvHeads
	if r.Dim < 2 || r.Dim > headDim || r.Dim%2 != 0 || len(r.InvFreq) != r.Dim/2 || n*headDim > xt.cols() || pt.numel() != xt.rows() || headDim > ropeMaxD {
		b.opErr("Rope", "x %v, %d+%d heads of %d (at most %d), rope dim %d, pos %v", xt.shape, heads, kvHeads, headDim, ropeMaxD, r.Dim, pt.shape)
		return
	}
	freq := b.ropeFreqs(r)
	if freq == nil {
		return
	}
	p := ropeParams{Row: uint32(xt.cols()), Half: uint32(headDim / 2), Rot: uint32(r.Dim / 2), QHeads: uint32(heads), Eps: eps}
	if r.NeoX {
		p.NeoX = 1
	}
	qb, kb := bind{buf: b.dummy}, bind{buf: b.dummy}
	if qw != nil {
		var ok bool
		if qb, ok = b.vec("Rope", qw, headDim); !ok {
			return
		}
		if kb, ok = b.vec("Rope", kw, headDim); !ok {
			return
		}
		p.Norm = 1
	}
	op(b, kRope).dispatch(b, p, n, xt.rows(), 1, xt.whole(), pt.whole(), bind{buf: freq}, qb, kb)
}

// AttendSeq implements model.EncoderOps.
func (b *Backend) AttendSeq(out, qkv, seq model.Tensor, heads, kvHeads, headDim, radius int, causal bool) {
	ot, qt, st := tt(out), tt(qkv), tt(seq)
	T := qt.rows()
	if headDim > attendSeqMaxD || kvHeads <= 0 || heads%kvHeads != 0 || radius < 0 || qt.cols() != (heads+2*kvHeads)*headDim || ot.numel() != T*heads*headDim || st.numel() != T {
		b.opErr("AttendSeq", "qkv %v, out %v, seq %v with %d/%d heads of %d (at most %d)", qt.shape, ot.shape, st.shape, heads, kvHeads, headDim, attendSeqMaxD)
		return
	}
	p := attendSeqParams{Heads: uint32(heads), Dh: uint32(headDim), T: uint32(T), Scale: float32(1 / math.Sqrt(float64(headDim))),
		KVHeads: uint32(kvHeads), Radius: uint32(radius)}
	if causal {
		p.Causal = 1
	}
	op(b, kAttendSeq).dispatch(b, p, heads, T, 1, qt.whole(), st.whole(), ot.whole())
}

// Pool implements model.EncoderOps.
func (b *Backend) Pool(out, x, bounds model.Tensor, mode model.Pooling) {
	ot, xt, bt := tt(out), tt(x), tt(bounds)
	S := bt.numel() / 2
	if ot.numel() != S*xt.cols() {
		b.opErr("Pool", "out %v for %d sequences of x %v", ot.shape, S, xt.shape)
		return
	}
	p := poolParams{D: uint32(xt.cols()), Seqs: uint32(S)}
	switch mode {
	case model.PoolCLS:
		p.Mode = 1
	case model.PoolLast:
		p.Mode = 2
	}
	op(b, kPool).dispatch(b, p, (xt.cols()+63)/64, S, 1, xt.whole(), bt.whole(), ot.whole())
}
