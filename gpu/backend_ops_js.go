//go:build js

package gpu

import (
	"math"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// opKernels holds the ops' state between calls (the kernels themselves are
// in Backend.kernels).
type opKernels struct {
	ropeFreqs map[*float32]*webgpu.Buffer
	moe       moeState    // backend_moe_js.go
	sel       selectState // backend_select_js.go
	fused     fusedState  // backend_fused_js.go
}

// wtype is the WTYPE code of a weight dtype (see shaders/common.wgsl).
func wtype(dt loader.DType) int {
	switch dt {
	case loader.F16:
		return 1
	case loader.Q8:
		return 2
	case loader.Q4:
		return 3
	}
	return 0
}

// op returns the kernel of s for an op, recording a compile error as the
// op's (the zero kernel it then returns dispatches nothing).
func op[P any](b *Backend, s kernelSpec[P], consts ...constant) kernelOf[P] {
	k, err := use(b, s, consts...)
	if err != nil {
		b.fail(err)
	}
	return k
}

// Embed implements model.Backend.
func (b *Backend) Embed(out, table, ids model.Tensor) {
	o, tb, id := tt(out), tt(table), tt(ids)
	if kquantWeight(tb.dtype) {
		b.embedKQuant(o, tb, id)
		return
	}
	wt := wtype(tb.dtype)
	k := op(b, kEmbed, constant{"WTYPE", float64(wt)})
	D, T := o.cols(), o.rows()
	for _, p := range tb.parts {
		k.dispatch(b, embedParams{D: uint32(D), Row0: uint32(p.row0), Rows: uint32(p.rows)}, (D+63)/64, T, 1,
			bind{buf: p.data}, bind{buf: p.scales}, id.whole(), o.whole())
	}
}

// RMSNorm implements model.Backend.
func (b *Backend) RMSNorm(out, x, w model.Tensor, eps float32) {
	o, xt, wt := tt(out), tt(x), tt(w)
	k := op(b, kRMSNorm)
	S := wt.numel()
	n := xt.numel() / S
	gx, gy := b.groups2D(n)
	if o == xt {
		b.opErr("RMSNorm", "in-place RMSNorm is not supported; use a separate output")
		return
	}
	k.dispatch(b, rmsNormParams{S: uint32(S), Eps: eps, Count: uint32(n)}, gx, gy, 1,
		xt.whole(), o.whole(), bind{buf: wt.parts[0].data}, bind{buf: b.dummy})
}

// AddRMSNorm implements model.Backend.
func (b *Backend) AddRMSNorm(x, residual, w model.Tensor, eps float32) {
	xt, rt, wt := tt(x), tt(residual), tt(w)
	k := op(b, kAddRMSNorm)
	S := wt.numel()
	n := xt.numel() / S
	gx, gy := b.groups2D(n)
	k.dispatch(b, rmsNormParams{S: uint32(S), Eps: eps, Count: uint32(n)}, gx, gy, 1,
		xt.whole(), rt.whole(), bind{buf: wt.parts[0].data}, bind{buf: b.dummy})
}

// QKNorm implements model.Backend.
func (b *Backend) QKNorm(qkv, qw, kw model.Tensor, heads, kvHeads int, eps float32) {
	q := tt(qkv)
	k := op(b, kQKNorm)
	Dh := tt(qw).numel()
	k.dispatch(b, rmsNormParams{S: uint32(Dh), Eps: eps, Heads: uint32(heads), KVHeads: uint32(kvHeads), Row: uint32(q.cols())}, heads+kvHeads, q.rows(), 1,
		q.whole(), bind{buf: b.dummy}, bind{buf: tt(qw).parts[0].data}, bind{buf: tt(kw).parts[0].data})
}

// RoPE implements model.Backend.
// With a bias, the dispatch covers every pair of the row: the value heads
// past `heads` are biased in the same pass, not rotated.
func (b *Backend) RoPE(x, pos, bias model.Tensor, heads int, r *model.RoPE) {
	xt := tt(x)
	k := op(b, kRoPE)
	freq := b.ropeFreqs(r)
	if freq == nil {
		return
	}
	half := r.Dim / 2
	prm := ropeParams{Row: uint32(xt.cols()), Heads: uint32(heads), Half: uint32(half)}
	if r.NeoX {
		prm.NeoX = 1
	}
	pairs := heads * half
	bb := bind{buf: b.dummy}
	if bias != nil {
		bt := tt(bias)
		if xt.cols()%r.Dim != 0 || bt.numel() != xt.cols() || bt.dtype != loader.F32 {
			b.opErr("RoPE", "bias of %d %v values for rows of %d (want f32, a whole number of heads of %d)", bt.numel(), bt.dtype, xt.cols(), r.Dim)
			return
		}
		prm.Bias, pairs, bb = 1, xt.cols()/2, bind{buf: bt.parts[0].data}
	}
	k.dispatch(b, prm, (pairs+63)/64, xt.rows(), 1,
		xt.whole(), tt(pos).whole(), bind{buf: freq}, bb)
}

// ropeFreqs uploads, once per frequency table, each frequency in turns per
// position at the scales rope.wgsl uses, computed in float64 and split into
// a high part of 18 significant bits and the rest.
func (b *Backend) ropeFreqs(r *model.RoPE) *webgpu.Buffer {
	if len(r.InvFreq) == 0 {
		b.opErr("RoPE", "no frequencies")
		return nil
	}
	if b.ops.ropeFreqs == nil {
		b.ops.ropeFreqs = map[*float32]*webgpu.Buffer{}
	}
	key := &r.InvFreq[0]
	if buf, ok := b.ops.ropeFreqs[key]; ok {
		return buf
	}
	raw := make([]byte, 32*len(r.InvFreq))
	put := func(o int, f float32) {
		bits := math.Float32bits(f)
		raw[o], raw[o+1], raw[o+2], raw[o+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
	}
	for i, f := range r.InvFreq {
		t := float64(f) / (2 * math.Pi)
		for j, m := range []float64{1, 64, 4096, 262144} {
			v := t * m
			v -= math.Floor(v)
			hi := math.Float32frombits(math.Float32bits(float32(v)) &^ 0x3f) // 18 significant bits
			put(32*i+4*j, hi)
			put(32*i+16+4*j, float32(v-float64(hi)))
		}
	}
	buf, err := b.createFilled("rope freqs", raw)
	if err != nil {
		b.fail(err)
		return nil
	}
	b.ops.ropeFreqs[key] = buf
	return buf
}

// SiluMul implements model.Backend.
func (b *Backend) SiluMul(out, gateUp model.Tensor) {
	o := tt(out)
	k := op(b, kSiluMul)
	n := o.numel()
	gx, gy := b.groups2D((n + 63) / 64)
	k.dispatch(b, siluMulParams{F: uint32(o.cols()), N: uint32(n)}, gx, gy, 1, tt(gateUp).whole(), o.whole())
}

// CopyRows implements model.Backend.
func (b *Backend) CopyRows(dst, src model.Tensor, row0 int) {
	d, s := tt(dst), tt(src)
	C := uint64(s.cols())
	b.copyBytes(s.buf, uint64(row0)*C*4, d.buf, 0, uint64(d.numel())*4)
}
