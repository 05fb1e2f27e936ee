//go:build js

package gpu

import (
	"fmt"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// Limits of the MoE kernels (shaders/moe_*.wgsl; the tile sizes they share
// with Go are in kernels.go).
const (
	moeMaxE   = 4096 // experts: moe_route ranks each against all
	moeChunkT = 512  // tokens per chunk: bounds the scratch buffers
)

// moeState holds the MoE's scratch buffers, sized for one chunk of tokens
// and kept between calls, so that repeated steps bind the same buffers.
type moeState struct {
	logits, ids, wts, act, y, order, tiles, counts *webgpu.Buffer
	xn, dummyW                                     *webgpu.Buffer // MoE's normalised rows; a writable dummy
	xr, sum                                        *webgpu.Buffer // Gemma 4's: the router's input rows; the sum before its post-norm
	shIDs, shWts, shAct                            *webgpu.Buffer // the shared expert's: zeros, sigmoid(x·gate), its activations

	// decodeMaxT and chunkT, when nonzero, replace tuning.moeDecodeMax
	// and moeChunkT; a negative decodeMaxT sends every chunk down the tiled
	// path (tests force each path with them).
	decodeMaxT, chunkT int
}

// MoE implements model.Backend. Routing, expert selection and the expert
// matmuls all run on the GPU: the expert kernels read the chosen experts and
// their weights from buffers the routing kernel wrote, so the recorded
// commands do not depend on the choice and a decode step replays as one
// program. Chunks of at most moeDecodeMaxT tokens (any number on a CPU
// adapter) run per-token GEMVs over the A chosen experts; larger chunks are
// grouped by expert on the GPU and run tiled kernels that read each
// expert's weights once per tile of up to 16 of its tokens. The K-quants
// take both paths too.
//
// The RMSNorm is folded into the router's GEMV (which also writes the
// normalised rows the experts read) and the experts' sums are added to res.
//
// A shared expert (Qwen3.5-MoE) runs as one more MoE of a single expert
// that every token takes, with the weight sigmoid(x·gate), which the
// routing kernel computes beside the routed weights: at decode its
// gate_up and down GEMVs are two more dispatches (6 in all), in prefill
// chunks its tiles.
//
// Gemma 4's parts (MoEFusion): GeGLU experts are the GELU override of the
// gate_up kernels; the router's own input weight is a second router GEMV
// (its normalised rows go to a scratch of their own); the per-expert
// scales multiply the weights in moe_route; with a post-norm the experts'
// sums go to a scratch, then one post_norm dispatch adds the normalised
// sum to Out (or res).
func (b *Backend) MoE(res, norm model.Tensor, eps float32, router, gateUp, down model.Tensor, topK int, normTopK bool, f model.MoEFusion) {
	shared := f.Shared
	gm, err := moeGemmaParts(f, tt(res), tt(router))
	if err != nil {
		b.opErr("MoE", "%v", err)
		return
	}
	nt := tt(norm)
	if len(nt.parts) == 0 || nt.dtype != loader.F32 || nt.numel() != tt(res).cols() {
		b.opErr("MoE", "norm weight %v %v: want (%d) f32", nt.dtype, nt.shape, tt(res).cols())
		return
	}
	var se *moeShared
	if shared.GateUp != nil {
		var err error
		if se, err = sharedExpert(shared, tt(res).cols()); err != nil {
			b.opErr("MoE", "%v", err)
			return
		}
	}
	dst := tt(res)
	if gm.out != nil {
		dst = gm.out
	}
	o := dst
	if gm.post != nil {
		T, D := dst.rows(), dst.cols()
		if o = b.scratchAct(&b.ops.moe.sum, "moe sum", T, D); o == nil {
			return
		}
	}
	b.moe("MoE", o, tt(res), tt(router), tt(gateUp), tt(down), topK, normTopK, nt, eps, se, gm)
	if gm.post != nil { // dst += RMSNorm(sum)·post, one post_norm dispatch
		D := dst.cols()
		prm := postNormParams{N: uint32(D), G: uint32(D), Groups: uint32(dst.rows()), Norm: 1, Eps: eps, Acc: 1, Scale: 1}
		gx, gy := b.groups2D(int(prm.Groups))
		op(b, kPostNorm).dispatch(b, prm, gx, gy, 1, o.whole(), bind{buf: gm.post.parts[0].data}, dst.whole())
	}
}

// moeGemma is an MoE call's checked Gemma 4 parts (model.MoEFusion).
type moeGemma struct {
	gelu                bool
	rnorm, escale, post *tensor // (D), (E), (D) f32 weights; nil: none
	out                 *tensor // (T, D) f32; nil: res
}

// moeGemmaParts checks f's Gemma 4 parts against res (T, D) and router
// (E, D).
func moeGemmaParts(f model.MoEFusion, res, router *tensor) (*moeGemma, error) {
	g := &moeGemma{gelu: f.GeluMul}
	D := res.cols()
	vec := func(what string, w model.Tensor, n int) (*tensor, error) {
		if w == nil {
			return nil, nil
		}
		t := tt(w)
		if len(t.parts) != 1 || t.dtype != loader.F32 || t.numel() != n {
			return nil, fmt.Errorf("%s %v %v: want (%d) f32 in one part", what, t.dtype, t.shape, n)
		}
		return t, nil
	}
	var err error
	if g.rnorm, err = vec("router norm", f.RouterNorm, D); err != nil {
		return nil, err
	}
	if len(router.shape) == 2 {
		if g.escale, err = vec("expert scale", f.ExpertScale, router.shape[0]); err != nil {
			return nil, err
		}
	}
	if g.post, err = vec("post-norm", f.PostNorm, D); err != nil {
		return nil, err
	}
	if f.Out != nil {
		g.out = tt(f.Out)
		if g.out.buf == nil || g.out.dtype != loader.F32 || g.out.rows() != res.rows() || g.out.cols() != D || g.out.buf == res.buf {
			return nil, fmt.Errorf("out %v: want an f32 activation (%d, %d) other than res", g.out.shape, res.rows(), D)
		}
	}
	return g, nil
}

// moeShared is a checked shared expert: gate_up (2Fs, D), down (D, Fs)
// and the gate (D) f32, each in one part.
type moeShared struct {
	gu, dn, gate *tensor
	F            int
}

// sharedExpert checks s against the hidden size D.
func sharedExpert(s model.SharedExpert, D int) (*moeShared, error) {
	if s.Down == nil || s.Gate == nil {
		return nil, fmt.Errorf("a shared expert needs gate_up, down and gate")
	}
	gu, dn, g := tt(s.GateUp), tt(s.Down), tt(s.Gate)
	if len(gu.shape) != 2 || len(dn.shape) != 2 || gu.shape[0]%2 != 0 || gu.shape[1] != D || dn.shape[0] != D || dn.shape[1] != gu.shape[0]/2 {
		return nil, fmt.Errorf("shared expert gate_up %v, down %v: want (2Fs, %d), (%d, Fs)", gu.shape, dn.shape, D, D)
	}
	if g.dtype != loader.F32 || g.numel() != D || len(g.parts) != 1 {
		return nil, fmt.Errorf("shared expert gate %v %v: want (%d) f32", g.dtype, g.shape, D)
	}
	if len(gu.parts) != 1 || len(dn.parts) != 1 {
		return nil, fmt.Errorf("the shared expert's gate_up (%d parts) and down (%d parts) must each fit one binding", len(gu.parts), len(dn.parts))
	}
	if gu.dtype != dn.dtype && !(kquantWeight(gu.dtype) && kquantWeight(dn.dtype)) {
		return nil, fmt.Errorf("shared expert gate_up is %s, down is %s: want one dtype (or two K-quants)", gu.dtype, dn.dtype)
	}
	F := gu.shape[0] / 2
	if c := moeChunk(gu.dtype); D%c != 0 || F%c != 0 || (kquantWeight(gu.dtype) && (D%256 != 0 || F%256 != 0)) {
		return nil, fmt.Errorf("shared expert of %s: D %d and Fs %d must be multiples of %d (256 for K-quants)", gu.dtype, D, F, c)
	}
	return &moeShared{gu: gu, dn: dn, gate: g, F: F}, nil
}

// moe is MoE: out += MoE(RMSNorm(x) * nw), plus the shared expert se
// when not nil, with gm's parts (with a post-norm, out = the sum instead).
func (b *Backend) moe(name string, o, xt, rt, gt, dt *tensor, topK int, norm bool, nw *tensor, eps float32, se *moeShared, gm *moeGemma) {
	sh, err := moeShape(o, xt, rt, gt, dt, topK)
	if err != nil {
		b.opErr(name, "%v", err)
		return
	}
	T, D, E, F, A := sh.T, sh.D, sh.E, sh.F, sh.A
	if kquantWeight(gt.dtype) && (D%256 != 0 || F%256 != 0) {
		b.opErr(name, "%s experts: D %d and F %d must be multiples of 256", gt.dtype, D, F)
		return
	}
	Fs := 0
	if se != nil {
		Fs = se.F
	}
	m := &b.ops.moe
	chunk := m.chunkT
	if chunk <= 0 {
		chunk = moeChunkT
	}
	limit := b.d.Limits.MaxStorageBufferBindingSize
	if fit := int(limit / uint64(4*A*max(D, F, Fs))); fit < chunk {
		chunk = fit
	}
	if chunk < 1 {
		b.fail(&webgpu.LimitError{Label: "MoE scratch", Limit: "maxStorageBufferBindingSize", Need: uint64(4 * A * max(D, F)), Have: limit})
		return
	}
	chunk = min(chunk, T)
	decodeMax := b.tune.moeDecodeMax()
	if m.decodeMaxT != 0 {
		decodeMax = m.decodeMaxT
	}
	n := chunk * A
	maxTiles := moeMaxTiles(n, E)
	logits := b.scratch(&m.logits, "moe logits", uint64(4*chunk*E))
	ids := b.scratch(&m.ids, "moe ids", uint64(4*n))
	wts := b.scratch(&m.wts, "moe weights", uint64(4*n))
	act := b.scratch(&m.act, "moe act", uint64(4*n*F))
	var y, order, tiles, counts *webgpu.Buffer
	if chunk > decodeMax {
		y = b.scratch(&m.y, "moe y", uint64(4*n*D))
		order = b.scratch(&m.order, "moe order", uint64(4*n))
		tiles = b.scratch(&m.tiles, "moe tiles", uint64(16*(maxTiles+1)))
		counts = b.scratch(&m.counts, "moe counts", uint64(12*E))
	}
	if logits == nil || ids == nil || wts == nil || act == nil || (chunk > decodeMax && (y == nil || order == nil || tiles == nil || counts == nil)) {
		return
	}
	// the experts' input: x, or the normalised rows of the chunk
	dw := bind{buf: b.scratch(&m.dummyW, "moe dummy", 16)}
	xe := b.scratch(&m.xn, "moe xn", uint64(4*chunk*D))
	if xe == nil {
		return
	}
	// the shared expert's: ids (zeros: its one expert), weights, activations
	var shIDs, shWts, shAct *webgpu.Buffer
	gateB, shWB := bind{buf: b.dummy}, dw
	if se != nil {
		shIDs = b.scratch(&m.shIDs, "moe shared ids", uint64(4*chunk))
		shWts = b.scratch(&m.shWts, "moe shared weights", uint64(4*chunk))
		shAct = b.scratch(&m.shAct, "moe shared act", uint64(4*chunk*Fs))
		if shIDs == nil || shWts == nil || shAct == nil {
			return
		}
		gateB, shWB = bind{buf: se.gate.parts[0].data}, bind{buf: shWts}
	}
	nwb, xnb := bind{buf: nw.parts[0].data}, bind{buf: xe}
	var xrb bind // the router's own input rows (Gemma 4), written beside the experts'
	if gm.rnorm != nil {
		xr := b.scratch(&m.xr, "moe xr", uint64(4*chunk*D))
		if xr == nil {
			return
		}
		xrb = bind{buf: xr}
	}
	escB, scaled := bind{buf: b.dummy}, uint32(0)
	if gm.escale != nil {
		escB, scaled = bind{buf: gm.escale.parts[0].data}, 1
	}
	dense, dr := b.moeGemvKernel(kMoeDense, rt.dtype, D)
	route, err := use(b, kMoeRoute)
	if err != nil {
		b.fail(err)
		return
	}
	normU := uint32(0)
	if norm {
		normU = 1
	}
	for t0 := 0; t0 < T; t0 += chunk {
		nt := min(chunk, T-t0)
		for _, p := range rt.parts {
			dense.dispatch(b, moeGemvParams{K: uint32(D), N: uint32(p.rows), E0: uint32(p.row0), T0: uint32(t0), LDO: uint32(E), Norm: 1, Eps: eps},
				moeCeil(p.rows, dr), nt, 1,
				bind{buf: p.data}, bind{buf: p.scales}, xt.whole(), nwb, bind{buf: b.dummy}, bind{buf: logits}, xnb)
		}
		if gm.rnorm != nil { // the logits again, from RMSNorm(x)·rnorm
			for _, p := range rt.parts {
				dense.dispatch(b, moeGemvParams{K: uint32(D), N: uint32(p.rows), E0: uint32(p.row0), T0: uint32(t0), LDO: uint32(E), Norm: 1, Eps: eps},
					moeCeil(p.rows, dr), nt, 1,
					bind{buf: p.data}, bind{buf: p.scales}, xt.whole(), bind{buf: gm.rnorm.parts[0].data}, bind{buf: b.dummy}, bind{buf: logits}, xrb)
			}
		}
		ex := moeIn{buf: xe, acc: gm.post == nil, dummyW: dw, gelu: gm.gelu}
		prm := moeRouteParams{E: uint32(E), A: uint32(A), Norm: normU, NT: uint32(nt), Scaled: scaled}
		xr := bind{buf: b.dummy}
		if se != nil {
			prm.D, xr = uint32(D), xnb
		}
		route.dispatch(b, prm, nt, 1, 1, bind{buf: logits}, bind{buf: ids}, bind{buf: wts}, xr, gateB, shWB, escB)
		b.moeExperts(sh, t0, nt, decodeMax, o, ex, gt, dt, ids, wts, act, y, order, tiles, counts)
		if se != nil { // one expert, always chosen, weighted by sigmoid(x·gate)
			one := moeDims{T: sh.T, D: D, E: 1, F: Fs, A: 1}
			sx := ex
			sx.acc, sx.gelu = true, false
			b.moeExperts(one, t0, nt, decodeMax, o, sx, se.gu, se.dn, shIDs, shWts, shAct, y, order, tiles, counts)
		}
	}
}

// moeExperts runs one chunk's experts by the path its size takes: token
// by token (K-quants: their own kernels), or tiled.
func (b *Backend) moeExperts(sh moeDims, t0, nt, decodeMax int, o *tensor, ex moeIn, gt, dt *tensor, ids, wts, act, y, order, tiles, counts *webgpu.Buffer) {
	switch {
	case nt <= decodeMax && kquantWeight(gt.dtype): // ggml's blocks: their own kernels (backend_kquant_js.go)
		b.moeKQuant(sh, t0, nt, o, ex, gt, dt, ids, wts, act)
	case nt <= decodeMax:
		b.moeDecode(sh, t0, nt, o, ex, gt, dt, ids, wts, act)
	default:
		b.moeTiled(sh, t0, nt, wtype(gt.dtype), o, ex, gt, dt, ids, wts, act, y, order, tiles, counts)
	}
}

// moeDims are an MoE call's checked dimensions.
type moeDims struct{ T, D, E, F, A int }

// moeShape checks the shapes and dtypes of an MoE call.
func moeShape(o, x, r, g, d *tensor, A int) (moeDims, error) {
	var sh moeDims
	if len(g.shape) != 3 || len(d.shape) != 3 || len(r.shape) != 2 {
		return sh, fmt.Errorf("router %v, gate_up %v, down %v: want (E, D), (E, 2F, D), (E, D, F)", r.shape, g.shape, d.shape)
	}
	if len(r.parts) == 0 || len(g.parts) == 0 || len(d.parts) == 0 {
		return sh, fmt.Errorf("router, gate_up and down must be uploaded weights")
	}
	if x.buf == nil || o.buf == nil || x.dtype != loader.F32 || o.dtype != loader.F32 {
		return sh, fmt.Errorf("x and out must be F32 activations")
	}
	sh = moeDims{T: x.rows(), D: x.cols(), E: g.shape[0], F: g.shape[1] / 2, A: A}
	T, D, E, F := sh.T, sh.D, sh.E, sh.F
	switch {
	case g.shape[1]%2 != 0 || F == 0:
		return sh, fmt.Errorf("gate_up %v: rows per expert must be 2F > 0", g.shape)
	case r.shape[0] != E || r.shape[1] != D || g.shape[2] != D || d.shape[0] != E || d.shape[1] != D || d.shape[2] != F:
		return sh, fmt.Errorf("x (%d, %d), router %v, gate_up %v, down %v do not agree", T, D, r.shape, g.shape, d.shape)
	case o.rows() != T || o.cols() != D:
		return sh, fmt.Errorf("out %v, want (%d, %d)", o.shape, T, D)
	case E > moeMaxE:
		return sh, fmt.Errorf("%d experts; the kernels take at most %d", E, moeMaxE)
	case A < 1 || A > E || A > moeMaxA:
		return sh, fmt.Errorf("top-k %d of %d experts; want 1..min(E, %d)", A, E, moeMaxA)
	case D%moeChunk(g.dtype) != 0 || F%moeChunk(g.dtype) != 0 || D%moeChunk(r.dtype) != 0:
		return sh, fmt.Errorf("D %d and F %d must be multiples of %d for %s experts and %d for a %s router",
			D, F, moeChunk(g.dtype), g.dtype, moeChunk(r.dtype), r.dtype)
	case g.dtype != d.dtype && !(kquantWeight(g.dtype) && kquantWeight(d.dtype)):
		return sh, fmt.Errorf("gate_up is %s, down is %s: want one dtype (or two K-quants)", g.dtype, d.dtype)
	case T == 0:
		return sh, fmt.Errorf("no tokens")
	}
	for _, w := range []struct {
		t *tensor
		n int
	}{{g, 2 * F}, {d, D}} {
		for _, p := range w.t.parts {
			if p.row0%w.n != 0 || p.rows%w.n != 0 {
				return sh, fmt.Errorf("a part of rows [%d, %d) splits an expert of %d rows", p.row0, p.row0+p.rows, w.n)
			}
		}
	}
	return sh, nil
}

// moeDecode runs one chunk's experts token by token: the fused
// gate_up+SiluMul GEMV over the A chosen experts, then the down GEMV that
// also sums the experts' outputs with their weights. Both run once per part
// of the expert tensors; parts after the first add to out.
// moeIn is the experts' input: buf, its first row for the chunk, and
// whether the chunk's sums add to out (MoE's residual) instead of writing it.
type moeIn struct {
	buf    *webgpu.Buffer
	t0     int
	acc    bool
	dummyW bind // bound where moe_gemv's xn is unused
	gelu   bool // the experts are GeGLUs (the gate_up kernels' GELU override)
}

func (b *Backend) moeDecode(sh moeDims, t0, nt int, o *tensor, x moeIn, gt, dt *tensor, ids, wts, act *webgpu.Buffer) {
	D, F, A := sh.D, sh.F, sh.A
	gu, gr := b.moeGemvKernel(kMoeGateUp, gt.dtype, D, geluConst(x.gelu))
	dn, dr := b.moeGemvKernel(kMoeDown, dt.dtype, A*F)
	for _, p := range gt.parts {
		gu.dispatch(b, moeGemvParams{K: uint32(D), N: uint32(2 * F), E0: uint32(p.row0 / (2 * F)), NE: uint32(p.rows / (2 * F)), A: uint32(A), T0: uint32(x.t0), F: uint32(F)},
			moeCeil(F, gr/2), A, nt,
			bind{buf: p.data}, bind{buf: p.scales}, bind{buf: x.buf}, bind{buf: ids}, bind{buf: wts}, bind{buf: act}, x.dummyW)
	}
	for i, p := range dt.parts {
		acc := uint32(0)
		if i > 0 || x.acc {
			acc = 1
		}
		dn.dispatch(b, moeGemvParams{K: uint32(F), N: uint32(D), E0: uint32(p.row0 / D), NE: uint32(p.rows / D), A: uint32(A), T0: uint32(t0), F: uint32(F), Acc: acc},
			moeCeil(D, dr), nt, 1,
			bind{buf: p.data}, bind{buf: p.scales}, bind{buf: act}, bind{buf: ids}, bind{buf: wts}, o.whole(), x.dummyW)
	}
}

// moeTiled runs one chunk's experts grouped by expert (any dtype, the
// K-quants too): moe_group builds the
// per-expert entry lists and the tile table, the tiled gate_up+SiluMul and
// down kernels run over every possible tile (those past the table's count
// return at once), and moe_combine sums each token's A outputs.
func (b *Backend) moeTiled(sh moeDims, t0, nt, ew int, o *tensor, x moeIn, gt, dt *tensor, ids, wts, act, y, order, tiles, counts *webgpu.Buffer) {
	D, E, F, A := sh.D, sh.E, sh.F, sh.A
	n := nt * A
	maxTiles := moeMaxTiles(n, E)
	group, err := use(b, kMoeGroup)
	if err != nil {
		b.fail(err)
		return
	}
	combine, err := use(b, kMoeCombine)
	if err != nil {
		b.fail(err)
		return
	}
	gu := op(b, kMoeGemmGateUp, constant{"WTYPE", float64(ew)}, constant{"KTYPE", ktypeOf(gt.dtype)}, geluConst(x.gelu))
	dn := op(b, kMoeGemmDown, constant{"WTYPE", float64(ew)}, constant{"KTYPE", ktypeOf(dt.dtype)})
	group.dispatch(b, moeGroupParams{E: uint32(E), N: uint32(n), TT: uint32(moeTileT)}, 1, 1, 1,
		bind{buf: ids}, bind{buf: order}, bind{buf: tiles}, bind{buf: counts})
	for _, p := range gt.parts {
		gu.dispatch(b, moeGemmParams{K: uint32(D), N: uint32(2 * F), E0: uint32(p.row0 / (2 * F)), NE: uint32(p.rows / (2 * F)), A: uint32(A), T0: uint32(x.t0), F: uint32(F)},
			moeCeil(F, moeTileRows/2), maxTiles, 1,
			bind{buf: p.data}, bind{buf: p.scales}, bind{buf: x.buf}, bind{buf: order}, bind{buf: tiles}, bind{buf: act}, bind{buf: p.data})
	}
	for _, p := range dt.parts {
		dn.dispatch(b, moeGemmParams{K: uint32(F), N: uint32(D), E0: uint32(p.row0 / D), NE: uint32(p.rows / D), A: uint32(A), F: uint32(F)},
			moeCeil(D, moeTileRows), maxTiles, 1,
			bind{buf: p.data}, bind{buf: p.scales}, bind{buf: act}, bind{buf: order}, bind{buf: tiles}, bind{buf: y}, bind{buf: p.data})
	}
	gx, gy := b.groups2D(moeCeil(nt*D, 64))
	cacc := uint32(0)
	if x.acc {
		cacc = 1
	}
	combine.dispatch(b, moeCombineParams{D: uint32(D), A: uint32(A), T0: uint32(t0), N: uint32(nt * D), Acc: cacc}, gx, gy, 1,
		bind{buf: y}, bind{buf: wts}, o.whole())
}

// moeMaxTiles bounds the tiles of n entries over E experts: every expert's
// list ends in at most one partial tile.
func moeMaxTiles(n, E int) int { return moeCeil(n, moeTileT) + min(E, n) }

// moeGemvKernel returns s, an entry of moe_gemv.wgsl, for weights of dtype dt
// whose workgroups stride over n values (tuning.moeGemvShape), and its rows
// per workgroup.
func (b *Backend) moeGemvKernel(s kernelSpec[moeGemvParams], dt loader.DType, n int, more ...constant) (kernelOf[moeGemvParams], int) {
	wg, r := b.tune.moeGemvShape(dt, n)
	k := op(b, s, append([]constant{{"WTYPE", float64(wtype(dt))}, {"WG", float64(wg)}, {"R", float64(r)}, b.oneSubgroup(wg)}, more...)...)
	return k, r
}

// geluConst is the GELU override of the MoE gate_up kernels: 1 for GeGLU
// experts (Gemma 4).
func geluConst(gelu bool) constant {
	if gelu {
		return constant{"GELU", 1}
	}
	return constant{"GELU", 0}
}

// oneSubgroup is the ONESG override of a workgroup of wg threads
// (tuning.oneSubgroup).
func (b *Backend) oneSubgroup(wg int) constant {
	onesg := 0.0
	if b.tune.oneSubgroup(wg) {
		onesg = 1
	}
	return constant{"ONESG", onesg}
}

// scratch returns *slot grown to at least n bytes. Growing first submits the
// pending commands, which may use the old buffer, then destroys it and
// forgets the programs and bind groups that reference it.
func (b *Backend) scratch(slot **webgpu.Buffer, label string, n uint64) *webgpu.Buffer {
	n = max(16, (n+15)&^15)
	if *slot != nil && (*slot).Size() >= n {
		return *slot
	}
	limit := min(b.d.Limits.MaxStorageBufferBindingSize, b.d.Limits.MaxBufferSize)
	if n > limit {
		b.fail(&webgpu.LimitError{Label: label, Limit: "maxStorageBufferBindingSize", Need: n, Have: limit})
		return nil
	}
	if *slot != nil {
		if len(b.pending) > 0 {
			if err := b.flush(nil, nil, 0); err != nil {
				b.fail(err)
			}
		}
		(*slot).Destroy()
		*slot = nil
		b.dropCaches()
	}
	buf, err := b.d.CreateBuffer(label, n, webgpu.UsageStorage)
	if err != nil {
		b.fail(err)
		return nil
	}
	*slot = buf
	return buf
}

// moeCeil is a/b rounded up.
func moeCeil(a, b int) int { return (a + b - 1) / b }
