//go:build js

package gpu

import (
	"wasmllm/loader"
	"wasmllm/model"
)

// MatMul implements model.Backend: out (T, N) = x (T, K) · wᵀ, one dispatch
// per row-part of w, each writing out's columns [row0, row0+rows).
func (b *Backend) MatMul(out, x, w model.Tensor) {
	o, xt, wt := tt(out), tt(x), tt(w)
	N, K := wt.rows(), wt.cols()
	T := xt.rows()
	switch {
	case len(wt.parts) == 0:
		b.opErr("MatMul", "weight %v is not an uploaded weight", wt.shape)
		return
	case xt.buf == nil || o.buf == nil:
		b.opErr("MatMul", "x %v and out %v must be activations", xt.shape, o.shape)
		return
	case xt.dtype != loader.F32 || o.dtype != loader.F32:
		b.opErr("MatMul", "x %s and out %s must be F32", xt.dtype, o.dtype)
		return
	case xt.cols() != K:
		b.opErr("MatMul", "x %v against weight %v: K differs", xt.shape, wt.shape)
		return
	case o.cols() != N || o.rows() != T:
		b.opErr("MatMul", "out %v, want (%d, %d) for x %v and weight %v", o.shape, T, N, xt.shape, wt.shape)
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
	if kquantWeight(wt.dtype) {
		b.matmulKQuant(o, xt, wt, T, N, K, false)
		return
	}
	if T <= b.tune.gemvMaxT() && K%gemvChunk(wt.dtype) == 0 {
		b.gemv(o, xt, wt, T, N, K)
		return
	}
	b.gemm(o, xt, wt, T, N, K)
}

func (b *Backend) gemv(o, xt, wt *tensor, T, N, K int) {
	b.gemvWith(o, xt, wt, T, N, K, b.tune.gemvShape(wt.dtype, T, K))
}

func (b *Backend) gemvWith(o, xt, wt *tensor, T, N, K int, s gemvShape) {
	b.gemvFused(o, xt, wt, T, N, K, s, gemvFusion{})
}

// gemvFusion is matmul_gemv's fused prologue and epilogue: norm, when not
// nil, the RMSNorm weight x is read with; silu for gate_up rows (one part);
// acc adds to out.
type gemvFusion struct {
	norm      *tensor
	eps       float32
	silu, acc bool
}

func (b *Backend) gemvFused(o, xt, wt *tensor, T, N, K int, s gemvShape, f gemvFusion) {
	k, err := use(b, kGemv,
		constant{"WTYPE", float64(wtype(wt.dtype))}, constant{"WG", float64(s.wg)}, constant{"R", float64(s.r)}, constant{"TB", float64(s.tb)})
	if err != nil {
		b.fail(err)
		return
	}
	chunks := K / gemvChunk(wt.dtype)
	prm := gemvParams{N: uint32(N), K: uint32(K), T: uint32(T), Chunks: uint32(chunks), Eps: f.eps}
	nw := bind{buf: b.dummy}
	if f.norm != nil {
		prm.Norm, nw = 1, bind{buf: f.norm.parts[0].data}
	}
	if f.silu {
		prm.Silu = 1
	}
	if f.acc {
		prm.Acc = 1
	}
	for _, p := range wt.parts {
		gx, gy := b.groups2D((p.rows + s.r - 1) / s.r)
		prm.Row0, prm.Rows = uint32(p.row0), uint32(p.rows)
		k.dispatch(b, prm, gx, gy, (T+s.tb-1)/s.tb,
			bind{buf: p.data}, bind{buf: p.scales}, xt.whole(), o.whole(), nw)
	}
}

func (b *Backend) gemm(o, xt, wt *tensor, T, N, K int) { b.gemmAcc(o, xt, wt, T, N, K, false) }

// gemmAcc is gemm, adding to out when acc is set.
func (b *Backend) gemmAcc(o, xt, wt *tensor, T, N, K int, acc bool) {
	wide := 0.0
	if b.tune.wideLoads {
		wide = 1
	}
	k, err := use(b, kGemm, constant{"WTYPE", float64(wtype(wt.dtype))}, constant{"WIDE", wide})
	if err != nil {
		b.fail(err)
		return
	}
	a := uint32(0)
	if acc {
		a = 1
	}
	x4 := xt.whole() // read as vec4 only when K is a multiple of 4
	if K%4 != 0 {
		x4 = bind{buf: b.dummy}
	}
	for _, p := range wt.parts {
		k.dispatch(b, gemmAccParams{N: uint32(N), K: uint32(K), Row0: uint32(p.row0), Rows: uint32(p.rows), T: uint32(T), Acc: a},
			(p.rows+gemmBN-1)/gemmBN, (T+gemmBM-1)/gemmBM, 1,
			bind{buf: p.data}, bind{buf: p.scales}, xt.whole(), o.whole(), x4)
	}
}

// PrefillChunk implements model.PrefillChunker (tuning.prefillChunk).
func (b *Backend) PrefillChunk() int { return b.tune.prefillChunk() }
