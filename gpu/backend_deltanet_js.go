//go:build js

package gpu

import (
	"fmt"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// deltaState holds the Gated DeltaNet's scratch (deltanet_chunk.wgsl's
// sc), grown on demand and kept between calls, so that repeated steps bind
// the same buffer.
type deltaState struct {
	scratch *webgpu.Buffer
}

// DeltaNet implements model.Backend. deltanet_conv runs the causal conv
// and its SiLU and moves the conv state, a thread per channel; then one
// token (decode) takes deltanet_step, a workgroup per value head that
// normalises q and k, updates the state and reads it out, and applies the
// gated RMSNorm: 2 dispatches, so a DeltaNet layer with a dense FFN is 6
// at decode. A prefill takes the chunked form (deltanet_chunk.wgsl):
// intra, every 64-token chunk at once; state, sequential over the chunks
// in each workgroup, parallel over value heads and blocks of value
// columns; norm. A batch whose scratch would not fit one binding runs in
// parts of whole chunks. States stay f32.
func (b *Backend) DeltaNet(out, proj, convW, a, dtBias, norm, convState, state model.Tensor, sp model.DeltaNetSpec, eps float32) {
	o, pt, cw, at, dt, nt, cs, st := tt(out), tt(proj), tt(convW), tt(a), tt(dtBias), tt(norm), tt(convState), tt(state)
	if err := deltaShapes(o, pt, cw, at, dt, nt, cs, st, sp); err != nil {
		b.opErr("DeltaNet", "%v", err)
		return
	}
	T := pt.rows()
	lim := min(b.d.Limits.MaxStorageBufferBindingSize, b.d.Limits.MaxBufferSize)
	tb := T
	if T > 1 {
		for tb > deltaChunkT && uint64(4*deltaScratchFloats(sp, tb)) > lim {
			tb = (tb/2 + deltaChunkT - 1) / deltaChunkT * deltaChunkT
		}
	}
	need := uint64(4 * deltaScratchFloats(sp, tb))
	if T == 1 {
		need = uint64(4 * sp.ConvDim())
	}
	sc := b.scratch(&b.ops.delta.scratch, "deltanet scratch", need)
	if sc == nil {
		return
	}
	conv := op(b, kDeltaConv)
	W, cd := sp.ProjWidth(), sp.ConvDim()
	w := func(x *tensor) bind { return bind{buf: x.parts[0].data} }
	for t0 := 0; t0 < T; t0 += tb {
		n := min(tb, T-t0)
		conv.dispatch(b, deltaConvParams{CD: uint32(cd), W: uint32(W), T0: uint32(t0), T: uint32(n), K: uint32(sp.ConvKernel)},
			(cd+63)/64, 1, 1, pt.whole(), w(cw), cs.whole(), bind{buf: sc})
		if T == 1 {
			op(b, kDeltaStep).dispatch(b, deltaStepParams{NK: uint32(sp.KeyHeads), NV: uint32(sp.ValueHeads), S: uint32(sp.HeadDim), W: uint32(W), CD: uint32(cd), Eps: eps},
				sp.ValueHeads, 1, 1, pt.whole(), bind{buf: sc}, w(at), w(dt), w(nt), st.whole(), o.whole())
			return
		}
		b.deltaChunks(sp, t0, n, eps, o, pt, at, dt, nt, st, sc)
	}
}

// deltaChunks records the chunked form over the n tokens from t0, whose
// conv is in sc.
func (b *Backend) deltaChunks(sp model.DeltaNetSpec, t0, n int, eps float32, o, pt, at, dt, nt, st *tensor, sc *webgpu.Buffer) {
	S, nv := sp.HeadDim, sp.ValueHeads
	tp := (n + deltaChunkT - 1) / deltaChunkT * deltaChunkT
	prm := deltaChunkParams{NK: uint32(sp.KeyHeads), NV: uint32(nv), S: uint32(S), W: uint32(sp.ProjWidth()), CD: uint32(sp.ConvDim()),
		T0: uint32(t0), TB: uint32(n), TP: uint32(tp), Eps: eps}
	bb := deltaColumns(S)
	w := func(x *tensor) bind { return bind{buf: x.parts[0].data} }
	op(b, kDeltaIntra).dispatch(b, prm, tp/deltaChunkT, nv, 1, pt.whole(), w(at), w(dt), bind{buf: sc})
	op(b, kDeltaState, constant{"BB", float64(bb)}).dispatch(b, prm, nv, (S+bb-1)/bb, 1, bind{buf: sc}, st.whole(), o.whole())
	op(b, kDeltaNorm).dispatch(b, prm, nv, n, 1, pt.whole(), w(nt), o.whole())
}

// deltaColumns is BB of deltanet_chunk.wgsl's state entry for heads of S
// dims: 16 value columns a workgroup, 8 past 128 dims (the block, S·BB,
// stays within its workgroup array).
func deltaColumns(S int) int {
	if S*16 <= deltaStateM {
		return 16
	}
	return 8
}

// deltaShapes checks a DeltaNet call's tensors against sp.
func deltaShapes(o, pt, cw, at, dt, nt, cs, st *tensor, sp model.DeltaNetSpec) error {
	S, nv, nk, K := sp.HeadDim, sp.ValueHeads, sp.KeyHeads, sp.ConvKernel
	switch {
	case S < 1 || S > deltaMaxS || nk < 1 || nv < 1 || nv%nk != 0 || K < 1:
		return fmt.Errorf("spec %+v: want heads of 1..%d dims and n_v a multiple of n_k", sp, deltaMaxS)
	case pt.buf == nil || pt.dtype != loader.F32 || pt.cols() != sp.ProjWidth() || pt.rows() < 1:
		return fmt.Errorf("proj %s %v: want (T, %d) f32", pt.dtype, pt.shape, sp.ProjWidth())
	case o.buf == nil || o.dtype != loader.F32 || o.numel() != pt.rows()*sp.Inner():
		return fmt.Errorf("out %s %v: want (%d, %d) f32", o.dtype, o.shape, pt.rows(), sp.Inner())
	case cs.buf == nil || cs.numel() != sp.ConvStateLen() || st.buf == nil || st.numel() != sp.StateLen():
		return fmt.Errorf("conv state %v, state %v: want (%d, %d) and (%d, %d) f32 activations", cs.shape, st.shape, K-1, sp.ConvDim(), nv*S, S)
	}
	for _, w := range []struct {
		name string
		t    *tensor
		n    int
	}{{"conv", cw, sp.ConvDim() * K}, {"a", at, nv}, {"dt_bias", dt, nv}, {"norm", nt, S}} {
		if w.t.dtype != loader.F32 || len(w.t.parts) != 1 || w.t.numel() != w.n {
			return fmt.Errorf("%s weight %s %v: want %d f32 values in one part", w.name, w.t.dtype, w.t.shape, w.n)
		}
	}
	return nil
}
