//go:build js

package gpu

// gemvFusion is matmul_gemv's fused prologue and epilogue: norm, when not
// nil, the RMSNorm weight x is read with; silu (or gelu, GeGLU's
// gelu_tanh) for gate_up rows (one part); acc adds to out.
type gemvFusion struct {
	norm            *tensor
	eps             float32
	silu, gelu, acc bool
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
	if f.gelu {
		prm.Silu = 2
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
