//go:build js

package gpu

import (
	"math"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// opKernels holds the ops' state between calls (the kernels themselves are
// in Backend.pipes).
type opKernels struct {
	ropeFreqs map[*float32]*webgpu.Buffer
	moe       moeState    // backend_moe_js.go
	sel       selectState // backend_select_js.go
	fused     fusedState  // backend_fused_js.go
	delta     deltaState  // backend_deltanet_js.go
	gemma     gemmaState  // backend_gemma_js.go
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

// rmsNorm sets out = RMSNorm(x) * w over each segment of len(w) values:
// MatMul's norm where the GEMV cannot fold it in.
func (b *Backend) rmsNorm(out, x, w model.Tensor, eps float32) {
	o, xt, wt := tt(out), tt(x), tt(w)
	k := op(b, kRMSNorm)
	S := wt.numel()
	n := xt.numel() / S
	gx, gy := b.groups2D(n)
	k.dispatch(b, rmsNormParams{S: uint32(S), Eps: eps, Count: uint32(n)}, gx, gy, 1,
		xt.whole(), o.whole(), bind{buf: wt.parts[0].data})
}

// ropeFreqs uploads, once per frequency table, each frequency in turns per
// position at the scales rope_kv.wgsl uses, computed in float64 and split into
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

// siluMul sets out (T, F) = silu(gateUp[:, :F]) * gateUp[:, F:]: MatMul's
// SiluAndMul where the GEMV cannot fold it in.
func (b *Backend) siluMul(out, gateUp model.Tensor) {
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
