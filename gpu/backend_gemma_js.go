//go:build js

package gpu

import (
	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// gemmaState holds the scratch of MatMul's Gemma epilogues: the product
// before its post-norm or soft-cap, and gate_up before GeluMul.
type gemmaState struct{ y, gu *webgpu.Buffer }

// matmulEpilogue is MatMul with GeluMul, PostNorm or SoftCap (Gemma): the
// product (with the pre-norm, and SiluMul when asked) by MatMul's own
// paths into a scratch, gelu_mul after it for GeluMul, then one post_norm
// dispatch for the post-norm, the soft-cap and the store or add. With
// GeluMul alone and no add, gelu_mul writes out directly.
func (b *Backend) matmulEpilogue(o, xt, wt *tensor, T, N int, f model.MatMulFusion) {
	// The direct GeluMul store aside, the product goes through post_norm.
	cols := N
	if f.SiluMul || f.GeluMul {
		cols = N / 2
	}
	var pw *tensor
	G := cols
	if f.PostNorm != nil {
		pw = tt(f.PostNorm)
		if len(pw.parts) == 0 || pw.dtype != loader.F32 || pw.numel() != cols {
			b.opErr("MatMul", "post-norm weight %v %v: want (%d) f32", pw.dtype, pw.shape, cols)
			return
		}
		if f.PostNormGroup > 0 {
			if G = f.PostNormGroup; cols%G != 0 {
				b.opErr("MatMul", "post-norm groups of %d in rows of %d", G, cols)
				return
			}
		}
	}
	direct := pw == nil && f.SoftCap <= 0 && !f.Add && f.Scale == 0
	y := o
	if !direct {
		if y = b.scratchAct(&b.ops.gemma.y, "matmul epilogue", T, cols); y == nil {
			return
		}
	}
	inner := model.MatMulFusion{Norm: f.Norm, Eps: f.Eps, SiluMul: f.SiluMul}
	if f.GeluMul && b.gemvGelu(y, xt, wt, T, N, f) {
		// fused into the GEMV, as SiluMul is
	} else if f.GeluMul {
		gu := b.scratchAct(&b.ops.gemma.gu, "gelu gate_up", T, N)
		if gu == nil {
			return
		}
		b.MatMul(gu, xt, wt, inner)
		b.geluMul(y, gu)
	} else {
		b.MatMul(y, xt, wt, inner)
	}
	if direct {
		return
	}
	prm := postNormParams{N: uint32(cols), G: uint32(G), Groups: uint32(T * cols / G), Eps: f.Eps, Cap: max(f.SoftCap, 0), Scale: 1}
	if f.Scale != 0 {
		prm.Scale = f.Scale
	}
	wb := bind{buf: b.dummy}
	if pw != nil {
		prm.Norm, wb = 1, bind{buf: pw.parts[0].data}
	}
	if f.Add {
		prm.Acc = 1
	}
	gx, gy := b.groups2D(int(prm.Groups))
	op(b, kPostNorm).dispatch(b, prm, gx, gy, 1, y.whole(), wb, o.whole())
}

// gemvGelu runs GeluMul's product as one matmul_gemv dispatch with the
// gelu_tanh epilogue where the GEMV takes the batch and the weight is one
// part (as MatMul fuses SiluMul), and reports whether it did.
func (b *Backend) gemvGelu(y, xt, wt *tensor, T, N int, f model.MatMulFusion) bool {
	K := wt.cols()
	if wt.stack != nil || kquantWeight(wt.dtype) || T > b.tune.gemvMaxT() || K%gemvChunk(wt.dtype) != 0 || len(wt.parts) != 1 {
		return false
	}
	var nw *tensor
	if f.Norm != nil {
		nw = tt(f.Norm)
	}
	b.gemvFused(y, xt, wt, T, N, K, b.tune.gemvShape(wt.dtype, T, K), gemvFusion{norm: nw, eps: f.Eps, gelu: true})
	return true
}

// geluMul sets out (T, F) = gelu_tanh(gateUp[:, :F]) * gateUp[:, F:]:
// MatMul's GeluMul.
func (b *Backend) geluMul(out, gateUp model.Tensor) {
	o := tt(out)
	n := o.numel()
	gx, gy := b.groups2D((n + 63) / 64)
	op(b, kGeluMul).dispatch(b, siluMulParams{F: uint32(o.cols()), N: uint32(n)}, gx, gy, 1, tt(gateUp).whole(), o.whole())
}

// GeluGate implements model.Backend: one gelu_gate dispatch.
func (b *Backend) GeluGate(out, gate, src model.Tensor, col0 int) {
	o, g, sr := tt(out), tt(gate), tt(src)
	P := o.cols()
	if o.buf == nil || g.buf == nil || sr.buf == nil || g.numel() != o.numel() || sr.rows() != o.rows() || col0 < 0 || col0+P > sr.cols() {
		b.opErr("GeluGate", "out %v, gate %v, src %v at column %d do not agree", o.shape, g.shape, sr.shape, col0)
		return
	}
	n := o.numel()
	if n == 0 {
		return
	}
	gx, gy := b.groups2D((n + 63) / 64)
	op(b, kGeluGate).dispatch(b, geluGateParams{P: uint32(P), C: uint32(sr.cols()), Col0: uint32(col0), N: uint32(n)}, gx, gy, 1,
		g.whole(), sr.whole(), o.whole())
}

// Scale implements model.Backend: one scale dispatch.
func (b *Backend) Scale(x model.Tensor, s float32) {
	xt := tt(x)
	if xt.buf == nil || xt.dtype != loader.F32 {
		b.opErr("Scale", "want an f32 activation, not %v %v", xt.dtype, xt.shape)
		return
	}
	n := xt.numel()
	if n == 0 {
		return
	}
	gx, gy := b.groups2D((n + 63) / 64)
	op(b, kScale).dispatch(b, scaleParams{N: uint32(n), S: s}, gx, gy, 1, xt.whole())
}

// AddNorm implements model.Backend: one post_norm dispatch (norm and add,
// no product).
func (b *Backend) AddNorm(out, x, w model.Tensor, eps float32) {
	o, xt, wt := tt(out), tt(x), tt(w)
	D := o.cols()
	if o.buf == nil || xt.buf == nil || xt.numel() != o.numel() || xt.cols() != D || len(wt.parts) == 0 || wt.dtype != loader.F32 || wt.numel() != D {
		b.opErr("AddNorm", "out %v, x %v, weight %v %v do not agree", o.shape, xt.shape, wt.dtype, wt.shape)
		return
	}
	prm := postNormParams{N: uint32(D), G: uint32(D), Groups: uint32(o.rows()), Norm: 1, Eps: eps, Acc: 1, Scale: 1}
	gx, gy := b.groups2D(int(prm.Groups))
	op(b, kPostNorm).dispatch(b, prm, gx, gy, 1, xt.whole(), bind{buf: wt.parts[0].data}, o.whole())
}
