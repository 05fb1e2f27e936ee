//go:build js

package gpu

import (
	"fmt"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// argmaxBlock is the logits per workgroup of argmax's first pass (its
// params' ch); topk.wgsl's block sizes are in kernels.go.
const argmaxBlock = 2048

// selectState holds the candidate buffers of Argmax and TopK between calls.
type selectState struct {
	part, cv, ci *webgpu.Buffer
}

// selectShape checks a (T, V) F32 logits tensor.
func selectShape(op string, l *tensor) (T, V int, err error) {
	if l.buf == nil || l.dtype != loader.F32 || len(l.shape) == 0 {
		return 0, 0, fmt.Errorf("%s: logits must be an F32 activation", op)
	}
	T, V = l.rows(), l.cols()
	if T == 0 || V == 0 {
		return 0, 0, fmt.Errorf("%s: empty logits %v", op, l.shape)
	}
	if T > 65535 {
		return 0, 0, fmt.Errorf("%s: %d rows; at most 65535", op, T)
	}
	return T, V, nil
}

// Argmax implements model.Backend: each row's blocks of argmaxBlock logits
// reduce to one (value, index) pair, then one workgroup per row merges them,
// so only T ids come back.
func (b *Backend) Argmax(out, logits model.Tensor) {
	o, l := tt(out), tt(logits)
	T, V, err := selectShape("Argmax", l)
	if err != nil {
		b.opErr("Argmax", "%v", err)
		return
	}
	if o.buf == nil || o.dtype != loader.I32 || o.numel() != T {
		b.opErr("Argmax", "out %v must be an I32 activation of %d values", o.shape, T)
		return
	}
	nb := moeCeil(V, argmaxBlock)
	part := b.scratch(&b.ops.sel.part, "argmax partials", uint64(8*T*nb))
	kp, err := use(b, kArgmaxPartial)
	if err != nil {
		b.fail(err)
		return
	}
	km, err := use(b, kArgmaxMerge)
	if err != nil {
		b.fail(err)
		return
	}
	if part == nil {
		return
	}
	p := argmaxParams{V: uint32(V), NB: uint32(nb), CH: argmaxBlock}
	kp.dispatch(b, p, nb, T, 1, l.whole(), bind{buf: part}, o.whole())
	km.dispatch(b, p, T, 1, 1, l.whole(), bind{buf: part}, o.whole())
}

// TopK implements model.Backend: each block of topkBlock logits yields its k
// best candidates in order, then one workgroup per row merges the sorted
// lists, so only the k candidates of each row come back.
func (b *Backend) TopK(ids, vals, logits model.Tensor, k int) {
	it, vt, l := tt(ids), tt(vals), tt(logits)
	T, V, err := selectShape("TopK", l)
	if err != nil {
		b.opErr("TopK", "%v", err)
		return
	}
	switch {
	case k < 1 || k > V:
		b.opErr("TopK", "k %d of %d logits", k, V)
		return
	case V > topkMaxV:
		b.opErr("TopK", "%d logits; the kernel takes at most %d", V, topkMaxV)
		return
	case it.buf == nil || it.dtype != loader.I32 || it.numel() != T*k:
		b.opErr("TopK", "ids %v must be an I32 activation of %d values", it.shape, T*k)
		return
	case vt.buf == nil || vt.dtype != loader.F32 || vt.numel() != T*k:
		b.opErr("TopK", "vals %v must be an F32 activation of %d values", vt.shape, T*k)
		return
	case it.buf == vt.buf:
		b.opErr("TopK", "ids and vals must be distinct tensors")
		return
	}
	nb := moeCeil(V, topkBlock)
	leaves := 1
	for leaves < nb {
		leaves *= 2
	}
	n := uint64(4 * T * nb * k)
	cv := b.scratch(&b.ops.sel.cv, "topk values", n)
	ci := b.scratch(&b.ops.sel.ci, "topk indices", n)
	kb, err := use(b, kTopKBlock)
	if err != nil {
		b.fail(err)
		return
	}
	km, err := use(b, kTopKMerge)
	if err != nil {
		b.fail(err)
		return
	}
	if cv == nil || ci == nil {
		return
	}
	p := topkParams{V: uint32(V), NB: uint32(nb), K: uint32(k), L: uint32(leaves)}
	kb.dispatch(b, p, nb, T, 1, l.whole(), bind{buf: cv}, bind{buf: ci}, it.whole(), vt.whole())
	km.dispatch(b, p, T, 1, 1, l.whole(), bind{buf: cv}, bind{buf: ci}, it.whole(), vt.whole())
}

// MaskLogits implements model.LogitMasker: one thread per logit clears
// the ones whose bit is off, before Argmax or TopK read the row.
func (b *Backend) MaskLogits(logits, mask model.Tensor) {
	l, m := tt(logits), tt(mask)
	T, V, err := selectShape("MaskLogits", l)
	if err != nil {
		b.opErr("MaskLogits", "%v", err)
		return
	}
	if m.buf == nil || m.dtype != loader.I32 || m.numel() != (V+31)/32 {
		b.opErr("MaskLogits", "mask %v must be an I32 activation of %d words", m.shape, (V+31)/32)
		return
	}
	k := op(b, kMaskLogits)
	gx, gy := b.groups2D((V + 63) / 64)
	k.dispatch(b, maskLogitsParams{V: uint32(V), WX: uint32(gx)}, gx, gy, T, l.whole(), m.whole())
}
