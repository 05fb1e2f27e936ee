//go:build js

package gpu

import (
	"encoding/binary"
	"fmt"
	"math"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// tensor is a backend tensor. Activations (F32, I32) live in one buffer.
// Weights are F32, F16 (packed pairs) or the planar Q8/Q4 layouts (a value
// plane and an f16 scale plane), split by rows into parts when one binding
// cannot hold them.
type tensor struct {
	shape []int
	dtype loader.DType
	buf   *webgpu.Buffer // activations
	parts []part         // weights
	// stack, for a Mixed weight (StackRows), are its row blocks: views of
	// the whole weight, each of one type, holding its own parts; parts
	// then lists them all.
	stack []*tensor
	freed bool
}

// part is rows [row0, row0+rows) of a weight, counted over all leading
// dimensions (an expert tensor (E, N, K) has E*N rows).
type part struct {
	row0, rows int
	data       *webgpu.Buffer
	scales     *webgpu.Buffer // planar types; nil otherwise
}

func (t *tensor) Shape() []int { return t.shape }

func (t *tensor) cols() int { return t.shape[len(t.shape)-1] }

func (t *tensor) rows() int { return t.numel() / t.cols() }

func (t *tensor) numel() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

func tt(x model.Tensor) *tensor { return x.(*tensor) }

// whole returns the binding of an activation.
func (t *tensor) whole() bind { return bind{buf: t.buf} }

// NewF32 implements model.Backend.
func (b *Backend) NewF32(shape ...int) model.Tensor { return b.newAct(loader.F32, shape) }

// NewI32 implements model.Backend.
func (b *Backend) NewI32(shape ...int) model.Tensor { return b.newAct(loader.I32, shape) }

func (b *Backend) newAct(dt loader.DType, shape []int) model.Tensor {
	t := &tensor{shape: append([]int(nil), shape...), dtype: dt}
	size := uint64(4 * t.numel())
	if size == 0 {
		size = 4
	}
	buf, err := b.d.CreateBuffer(fmt.Sprintf("act %s %v", dt, shape), size, webgpu.UsageStorage)
	if err != nil {
		b.fail(err)
		buf = b.dummy
	}
	t.buf = buf
	b.counters.ActivationBytes += int64(size)
	return t
}

// Free implements model.Backend. Programs and bind groups that use the
// tensor are dropped with it.
func (b *Backend) Free(x model.Tensor) {
	t := tt(x)
	if t.freed {
		return
	}
	if len(b.pending) > 0 {
		b.flush(nil, nil, 0)
	}
	t.freed = true
	if t.buf != nil && t.buf != b.dummy {
		t.buf.Destroy()
	}
	for _, p := range t.parts {
		p.data.Destroy()
		if p.scales != nil {
			p.scales.Destroy()
		}
	}
	b.dropCaches()
}

// gpuWeight maps a weight to a dtype the kernels read, converting on the
// host where needed.
func gpuWeight(w *loader.Tensor) (*loader.Tensor, error) {
	switch w.DType {
	case loader.F32, loader.F16, loader.Q8, loader.Q4:
		return w, nil
	case loader.Q8_0, loader.Q4_0:
		return loader.ToPlanar(w)
	}
	if kquantWeight(w.DType) { // ggml's blocks, Q6_K's padded (kquant.go)
		data, err := PadKQuant(w.DType, w.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Name, err)
		}
		return &loader.Tensor{Name: w.Name, DType: w.DType, Shape: w.Shape, Data: data}, nil
	}
	f, err := w.F32()
	if err != nil {
		return nil, err
	}
	data := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	return &loader.Tensor{Name: w.Name, DType: loader.F32, Shape: w.Shape, Data: data}, nil
}

// Upload implements model.Backend.
func (b *Backend) Upload(w *loader.Tensor) (model.Tensor, error) {
	if err := w.CheckSize(); err != nil {
		return nil, err
	}
	g, err := gpuWeight(w)
	if err != nil {
		return nil, err
	}
	return b.uploadParts(w.Name, g.DType, g.Shape, func(label string, off, n int) (*webgpu.Buffer, error) {
		return b.createFilled(label, g.Data[off:off+n])
	}, len(g.Data))
}

func (b *Backend) freeParts(t *tensor) {
	for _, p := range t.parts {
		p.data.Destroy()
		if p.scales != nil {
			p.scales.Destroy()
		}
	}
	t.parts = nil
}

// weightRowBytes is the bytes one row of cols values takes in the value
// plane, and in the scale plane (0 for unquantised types).
func weightRowBytes(dt loader.DType, cols int) (int, int) {
	switch dt {
	case loader.F16:
		return 2 * cols, 0
	case loader.Q8:
		return cols, cols / 16
	case loader.Q4:
		return cols / 2, cols / 16
	}
	if kquantWeight(dt) {
		return kquantRowBytes(dt, cols), 0
	}
	return 4 * cols, 0
}

// createFilled creates a storage buffer holding data (padded to 4 bytes).
func (b *Backend) createFilled(label string, data []byte) (*webgpu.Buffer, error) {
	size := uint64(len(data)+3) &^ 3
	if size == 0 {
		size = 4
	}
	buf, err := b.d.CreateBuffer(label, size, webgpu.UsageStorage)
	if err != nil {
		return nil, err
	}
	if len(data)%4 != 0 {
		data = append(data[:len(data):len(data)], make([]byte, 4-len(data)%4)...)
	}
	if err := b.d.WriteBuffer(buf, 0, data); err != nil {
		buf.Destroy()
		return nil, err
	}
	return buf, nil
}

// WriteI32 implements model.Backend.
func (b *Backend) WriteI32(x model.Tensor, v []int32) {
	t := tt(x)
	off := b.beginWrite(len(v) * 4)
	for i, id := range v {
		binary.LittleEndian.PutUint32(b.upload[off+4*i:], uint32(id))
	}
	b.push(cmd{kind: cmdWrite, dst: t.buf, n: uint64(4 * len(v)), up: off})
}

// WriteF32 implements model.Backend.
func (b *Backend) WriteF32(x model.Tensor, v []float32) {
	t := tt(x)
	off := b.beginWrite(len(v) * 4)
	for i, f := range v {
		binary.LittleEndian.PutUint32(b.upload[off+4*i:], math.Float32bits(f))
	}
	b.push(cmd{kind: cmdWrite, dst: t.buf, n: uint64(4 * len(v)), up: off})
}

// ReadF32 implements model.Backend.
func (b *Backend) ReadF32(x model.Tensor, dst []float32) error {
	t := tt(x)
	if len(dst) != t.numel() {
		return fmt.Errorf("gpu: ReadF32 of %d values into %d", t.numel(), len(dst))
	}
	raw := b.readBuf(4 * len(dst))
	if err := b.flush(t.buf, raw, 0); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return nil
}

// ReadI32 implements model.Backend.
func (b *Backend) ReadI32(x model.Tensor, dst []int32) error {
	t := tt(x)
	if len(dst) != t.numel() {
		return fmt.Errorf("gpu: ReadI32 of %d values into %d", t.numel(), len(dst))
	}
	raw := b.readBuf(4 * len(dst))
	if err := b.flush(t.buf, raw, 0); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return nil
}

// ReadI32F32 reads an I32 and an F32 tensor (the top-k ids and logits) in
// one submit and one map: both are copied into a staging buffer by the
// pending program, which is then read back once.
func (b *Backend) ReadI32F32(ids model.Tensor, idsDst []int32, vals model.Tensor, valsDst []float32) error {
	it, vt := tt(ids), tt(vals)
	if len(idsDst) != it.numel() || len(valsDst) != vt.numel() {
		return fmt.Errorf("gpu: ReadI32F32 of %d and %d values into %d and %d", it.numel(), vt.numel(), len(idsDst), len(valsDst))
	}
	ni, nv := uint64(4*len(idsDst)), uint64(4*len(valsDst))
	if b.pair == nil || b.pair.Size() < ni+nv {
		if b.pair != nil {
			if len(b.pending) > 0 {
				if err := b.flush(nil, nil, 0); err != nil {
					return err
				}
			}
			b.pair.Destroy()
			b.dropCaches()
		}
		buf, err := b.d.CreateBuffer("readback pair", max(ni+nv, 256), webgpu.UsageStorage)
		if err != nil {
			return err
		}
		b.pair = buf
	}
	b.copyBytes(it.buf, 0, b.pair, 0, ni)
	b.copyBytes(vt.buf, 0, b.pair, ni, nv)
	raw := b.readBuf(int(ni + nv))
	if err := b.flush(b.pair, raw, 0); err != nil {
		return err
	}
	for i := range idsDst {
		idsDst[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	for i := range valsDst {
		valsDst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[int(ni)+4*i:]))
	}
	return nil
}
