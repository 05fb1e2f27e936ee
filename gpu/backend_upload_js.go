//go:build js

package gpu

import (
	"fmt"
	"syscall/js"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// UploadJS makes a weight resident from bytes held by JavaScript, such as a
// verified shard's subarray, writing them into GPU buffers without copying
// them through Go. It shares Upload's split by rows (uploadParts). The
// bytes must already be in a layout the kernels read (F32, F16, the planar
// Q8/Q4 layouts or K-quant matrices, as converted model folders store
// them); other dtypes are an error, for the caller to pass through Upload.
func (b *Backend) UploadJS(name string, dt loader.DType, shape []int, src js.Value) (model.Tensor, error) {
	switch {
	case dt == loader.F32, dt == loader.F16, dt == loader.Q8, dt == loader.Q4:
	case kquantWeight(dt) && len(shape) >= 2: // ggml's blocks as they are
	default:
		return nil, fmt.Errorf("gpu: UploadJS %s: dtype %s needs converting on the host; use Upload", name, dt)
	}
	n := 1
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("gpu: UploadJS %s: shape %v", name, shape)
		}
		n *= d
	}
	size, err := dt.Size(n)
	if err != nil {
		return nil, fmt.Errorf("gpu: UploadJS %s: %w", name, err)
	}
	if got := src.Get("byteLength").Int(); got != size {
		return nil, fmt.Errorf("gpu: UploadJS %s: %v %s needs %d bytes, has %d", name, shape, dt, size, got)
	}
	if gb, bb := KQuantBlockBytes(dt), dt.BlockBytes(); kquantWeight(dt) && gb != bb {
		// Q6_K: bytes [off, off+n) of the padded layout, from ggml's blocks
		return b.uploadParts(name, dt, shape, func(label string, off, n int) (*webgpu.Buffer, error) {
			return b.createPaddedFromJS(label, src, off/gb*bb, n/gb, bb, gb)
		}, size/bb*gb)
	}
	return b.uploadParts(name, dt, shape, func(label string, off, n int) (*webgpu.Buffer, error) {
		return b.createFromJS(label, src, off, n)
	}, size)
}

// createPaddedFromJS creates a buffer holding nb blocks of bb bytes from
// byte off of src, each padded to gb bytes (PadKQuant), copied through Go
// a few MiB at a time.
func (b *Backend) createPaddedFromJS(label string, src js.Value, off, nb, bb, gb int) (*webgpu.Buffer, error) {
	buf, err := b.d.CreateBuffer(label, uint64(max(nb*gb, 4)), webgpu.UsageStorage)
	if err != nil {
		return nil, err
	}
	per := max(1, (8<<20)/bb) // blocks per copy
	raw := make([]byte, min(per, nb)*bb)
	out := make([]byte, min(per, nb)*gb)
	for i := 0; i < nb; i += per {
		k := min(per, nb-i)
		js.CopyBytesToGo(raw[:k*bb], src.Call("subarray", off+i*bb, off+(i+k)*bb))
		padBlocks(out[:k*gb], raw[:k*bb], bb, gb)
		if err := b.d.WriteBuffer(buf, uint64(i*gb), out[:k*gb]); err != nil {
			buf.Destroy()
			return nil, err
		}
	}
	return buf, nil
}

// uploadParts makes a weight of dtype dt (one the kernels read) resident,
// split by rows into buffers within the device's limits (rowsPerPart): for
// each part, fill creates a buffer holding bytes [off, off+n) of the
// weight's value plane and, for quantised types, of its scale plane. On a
// failure every buffer made so far is destroyed. size is the weight's
// bytes, for the counters.
func (b *Backend) uploadParts(name string, dt loader.DType, shape []int, fill func(label string, off, n int) (*webgpu.Buffer, error), size int) (model.Tensor, error) {
	shape = append([]int(nil), shape...)
	if len(shape) == 0 {
		shape = []int{1}
	}
	t := &tensor{shape: shape, dtype: dt}
	rows, cols := t.rows(), t.cols()
	if dt == loader.F16 && cols%2 != 0 {
		return nil, fmt.Errorf("gpu: %s: F16 weight with an odd row length %d", name, cols)
	}
	rowBytes, scaleBytes := weightRowBytes(dt, cols)
	per, err := b.rowsPerPart(name, shape, rows, rowBytes)
	if err != nil {
		return nil, err
	}
	scalePlane := 0
	if scaleBytes > 0 {
		scalePlane = (rows*rowBytes + 3) &^ 3
	}
	for r0 := 0; r0 < rows; r0 += per {
		k := min(per, rows-r0)
		p := part{row0: r0, rows: k}
		p.data, err = fill(fmt.Sprintf("%s rows %d+%d", name, r0, k), r0*rowBytes, k*rowBytes)
		if err == nil && scaleBytes > 0 {
			p.scales, err = fill(fmt.Sprintf("%s scales %d+%d", name, r0, k), scalePlane+r0*scaleBytes, k*scaleBytes)
		}
		if err != nil {
			if p.data != nil {
				p.data.Destroy()
			}
			b.freeParts(t)
			return nil, err
		}
		t.parts = append(t.parts, p)
	}
	b.counters.WeightBytes += int64(size)
	return t, nil
}

// rowsPerPart is how many rows of rowBytes each buffer of a weight holds:
// within the binding and buffer limits, whole
// experts for (E, N, K) tensors, multiples of 256 rows when that fits.
func (b *Backend) rowsPerPart(name string, shape []int, rows, rowBytes int) (int, error) {
	unit := 1
	if len(shape) == 3 {
		unit = shape[1]
	}
	limit := min(b.d.Limits.MaxStorageBufferBindingSize, b.d.Limits.MaxBufferSize)
	per := rows
	if uint64(rows)*uint64(rowBytes) > limit {
		per = int(limit/uint64(rowBytes)) / unit * unit
		if per >= 256*unit {
			per = per / (256 * unit) * 256 * unit
		}
		if per == 0 {
			return 0, &webgpu.LimitError{Label: name, Limit: "maxStorageBufferBindingSize", Need: uint64(rowBytes) * uint64(unit), Have: limit}
		}
	}
	return per, nil
}

// createFromJS creates a storage buffer holding src[off:off+n] (padded to 4
// bytes), written from JavaScript.
func (b *Backend) createFromJS(label string, src js.Value, off, n int) (*webgpu.Buffer, error) {
	size := uint64(n+3) &^ 3
	if size == 0 {
		size = 4
	}
	buf, err := b.d.CreateBuffer(label, size, webgpu.UsageStorage)
	if err != nil {
		return nil, err
	}
	head := n &^ 3
	if head > 0 {
		err = b.d.WriteBufferFromJS(buf, 0, src.Call("subarray", off, off+head))
	}
	if err == nil && head < n {
		// The last bytes go through a padded copy in JavaScript.
		tail := js.Global().Get("Uint8Array").New(4)
		tail.Call("set", src.Call("subarray", off+head, off+n))
		err = b.d.WriteBufferFromJS(buf, uint64(head), tail)
	}
	if err != nil {
		buf.Destroy()
		return nil, err
	}
	return buf, nil
}
