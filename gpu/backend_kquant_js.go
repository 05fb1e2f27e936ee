//go:build js

package gpu

import (
	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
)

// K-quant weights (Q2_K .. Q6_K) stay ggml's blocks on the GPU, uploaded as
// they are but for padding to 16 bytes (kquant.go; rows of K/256 blocks,
// no scale plane; experts split between parts on expert boundaries) and read by their own kernels:
// matmul_kquant.wgsl (decode GEMV, prefill GEMM), embed_kquant.wgsl and
// moe_kquant.wgsl (the experts, eight rows a workgroup, entry by entry for
// every chunk size).

// kquantWeight reports the K-quant block types kept as they are on the GPU.
func kquantWeight(dt loader.DType) bool {
	switch dt {
	case loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K:
		return true
	}
	return false
}

// ktypeOf is a kernel's KTYPE for weights of dtype dt: ggml's type id for a
// K-quant, 0 for the others (moe_gemm's WTYPE then).
func ktypeOf(dt loader.DType) float64 {
	if kquantWeight(dt) {
		return float64(dt)
	}
	return 0
}

// kquantRowBytes is the bytes of one row of cols values of K-quant dt in
// GPU memory (KQuantBlockBytes).
func kquantRowBytes(dt loader.DType, cols int) int {
	return cols / 256 * KQuantBlockBytes(dt)
}

// matmulKQuant runs MatMul for a K-quant weight: GEMV up to gemvMaxT
// tokens, the tiled GEMM above; with acc the product is added to out. The
// caller has checked the shapes.
func (b *Backend) matmulKQuant(o, xt, wt *tensor, T, N, K int, acc bool) {
	kt := constant{"KTYPE", float64(wt.dtype)}
	a := uint32(0)
	if acc {
		a = 1
	}
	if T <= b.tune.gemvMaxT() {
		tb := min(T, kquantMaxTB)
		// As matmul_gemv: rows share the activations they are dotted with;
		// on a CPU adapter a workgroup is one subgroup (kquantWG: one SIMD
		// step on llvmpipe), with 16 rows for one or two tokens (kquantRO).
		wg := b.tune.kquantWG(K/32, kquantR*kquantMaxTB)
		ro := b.tune.kquantRO(tb)
		k, err := use(b, kKQuantGemv, kt, constant{"TB", float64(tb)}, constant{"WG", float64(wg)}, constant{"RO", float64(ro)}, b.oneSubgroup(wg))
		if err != nil {
			b.fail(err)
			return
		}
		rows := kquantR * ro
		for _, p := range wt.parts {
			gx, gy := b.groups2D((p.rows + rows - 1) / rows)
			k.dispatch(b, kquantParams{N: uint32(N), K: uint32(K), Row0: uint32(p.row0), Rows: uint32(p.rows), T: uint32(T), Acc: a},
				gx, gy, (T+tb-1)/tb, bind{buf: p.data}, xt.whole(), o.whole(), bind{buf: p.data})
		}
		return
	}
	k, err := use(b, kKQuantGemm, kt)
	if err != nil {
		b.fail(err)
		return
	}
	for _, p := range wt.parts {
		k.dispatch(b, kquantParams{N: uint32(N), K: uint32(K), Row0: uint32(p.row0), Rows: uint32(p.rows), T: uint32(T), Acc: a},
			(p.rows+gemmBN-1)/gemmBN, (T+gemmBM-1)/gemmBM, 1, bind{buf: p.data}, xt.whole(), o.whole(), bind{buf: p.data})
	}
}

// embedKQuant runs Embed for a K-quant table.
func (b *Backend) embedKQuant(o, tb, id *tensor) {
	k := op(b, kKQuantEmbed, constant{"KTYPE", float64(tb.dtype)})
	D, T := o.cols(), o.rows()
	if D%256 != 0 || tb.cols() != D {
		b.opErr("Embed", "%s table %v against out %v: D must match and be a multiple of 256", tb.dtype, tb.shape, o.shape)
		return
	}
	for _, p := range tb.parts {
		k.dispatch(b, embedParams{D: uint32(D), Row0: uint32(p.row0), Rows: uint32(p.rows)}, (D/4+63)/64, T, 1,
			bind{buf: p.data}, id.whole(), o.whole())
	}
}

// moeKQuant runs one decode-sized chunk's K-quant experts (larger ones go
// to moeTiled's tiles): the gate_up+SiluMul kernel for every (token, slot) entry, then the down kernel that sums each
// token's experts with their weights. Both run once per part of the expert
// tensors; parts after the first (and MoE's residual) add to out.
func (b *Backend) moeKQuant(sh moeDims, t0, nt int, o *tensor, x moeIn, gt, dt *tensor, ids, wts, act *webgpu.Buffer) {
	D, F, A := sh.D, sh.F, sh.A
	// eight rows a workgroup (16 on a CPU adapter), its threads as the
	// GEMV's (matmulKQuant)
	ro := b.tune.kquantRO(1)
	gwg, dwg := b.tune.kquantWG(D/32, kquantR), b.tune.kquantWG(F/32, kquantR)
	gu := op(b, kKQuantMoeGU, constant{"KTYPE", float64(gt.dtype)}, constant{"WG", float64(gwg)}, constant{"RO", float64(ro)}, b.oneSubgroup(gwg), geluConst(x.gelu))
	dn := op(b, kKQuantMoeDn, constant{"KTYPE", float64(dt.dtype)}, constant{"WG", float64(dwg)}, constant{"RO", float64(ro)}, b.oneSubgroup(dwg))
	gx, gy := b.groups2D(F / (4 * ro))
	for _, p := range gt.parts {
		gu.dispatch(b, kquantMoeParams{K: uint32(D), N: uint32(2 * F), E0: uint32(p.row0 / (2 * F)), NE: uint32(p.rows / (2 * F)), A: uint32(A), T0: uint32(x.t0), F: uint32(F)},
			gx, gy, nt*A, bind{buf: p.data}, bind{buf: x.buf}, bind{buf: ids}, bind{buf: act})
	}
	dx, dy := b.groups2D(D / (8 * ro))
	for i, p := range dt.parts {
		acc := uint32(0)
		if i > 0 || x.acc {
			acc = 1
		}
		dn.dispatch(b, kquantMoeParams{K: uint32(F), N: uint32(D), E0: uint32(p.row0 / D), NE: uint32(p.rows / D), A: uint32(A), T0: uint32(t0), F: uint32(F), Acc: acc},
			dx, dy, nt, bind{buf: p.data}, bind{buf: act}, bind{buf: ids}, bind{buf: wts}, o.whole())
	}
}
