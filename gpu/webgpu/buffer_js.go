//go:build js

package webgpu

import (
	"syscall/js"
)

// writeChunk bounds the runtime's upload array: larger writes go in pieces.
const writeChunk = 16 << 20

// Buffer is a GPUBuffer. Its allocation is Size rounded up to 4 bytes, so
// any byte range of it can be copied and read back.
type Buffer struct {
	d         *Device
	h         int
	size      uint64
	alloc     uint64
	usage     BufferUsage
	label     string
	destroyed bool
}

// Size is the size asked for at creation.
func (b *Buffer) Size() uint64 { return b.size }

// Usage is the buffer's usage flags.
func (b *Buffer) Usage() BufferUsage { return b.usage }

// Label is the buffer's label.
func (b *Buffer) Label() string { return b.label }

// ID is the buffer's handle in the replayer: nonzero, and distinct among the
// device's buffers, for hashing lists of work that use it.
func (b *Buffer) ID() int { return b.h }

// CreateBuffer allocates a zeroed buffer. Storage and uniform buffers always
// get UsageCopyDst and UsageCopySrc as well, so they can be written and read.
func (d *Device) CreateBuffer(label string, size uint64, usage BufferUsage) (*Buffer, error) {
	if err := d.Lost(); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, errorf("CreateBuffer", label, "size is 0")
	}
	alloc := align4(size)
	if alloc > d.Limits.MaxBufferSize {
		return nil, &LimitError{Label: label, Limit: "maxBufferSize", Need: alloc, Have: d.Limits.MaxBufferSize}
	}
	if usage&UsageMapRead != 0 {
		return nil, errorf("CreateBuffer", label, "UsageMapRead buffers are internal to readback")
	}
	if usage&(UsageStorage|UsageUniform) != 0 {
		usage |= UsageCopyDst | UsageCopySrc
	}
	if usage&UsageUniform != 0 && alloc > d.Limits.MaxUniformBufferBindingSize && usage&UsageStorage == 0 {
		return nil, &LimitError{Label: label, Limit: "maxUniformBufferBindingSize", Need: alloc, Have: d.Limits.MaxUniformBufferBindingSize}
	}
	h := d.rt.Call("createBuffer", label, float64(alloc), int(usage)).Int()
	if h == 0 {
		return nil, d.takeErrorsOr("CreateBuffer", label)
	}
	return &Buffer{d: d, h: h, size: size, alloc: alloc, usage: usage, label: label}, nil
}

// takeErrorsOr returns the recorded errors, or a generic failure.
func (d *Device) takeErrorsOr(op, label string) error {
	if err := d.takeErrors(d.rt.Call("errorCount").Int()); err != nil {
		return err
	}
	return errorf(op, label, "failed")
}

// Destroy frees the buffer's GPU memory. Programs and bind groups that use it
// become invalid.
func (b *Buffer) Destroy() {
	if b.destroyed {
		return
	}
	b.destroyed = true
	if b.d.Lost() == nil {
		b.d.rt.Call("destroyBuffer", b.h)
	}
}

// JSValue returns the GPUBuffer (null once destroyed).
func (b *Buffer) JSValue() js.Value { return b.d.rt.Call("buffer", b.h) }

// checkRange validates [off, off+n) of b for op.
func (b *Buffer) checkRange(op string, off, n uint64, need BufferUsage) error {
	if b.destroyed {
		return errorf(op, b.label, "buffer was destroyed")
	}
	if b.usage&need != need {
		return errorf(op, b.label, "buffer lacks usage %#x", uint32(need))
	}
	if off > b.size || n > b.size-off {
		return errorf(op, b.label, "range [%d, %d) outside the buffer's %d bytes", off, off+n, b.size)
	}
	return nil
}

// WriteBuffer copies data into b at off through the queue; it lands before
// the next submitted work. off must be a multiple of 4, and so must len(data)
// unless the write ends at the end of the buffer.
func (d *Device) WriteBuffer(b *Buffer, off uint64, data []byte) error {
	if err := d.Lost(); err != nil {
		return err
	}
	n := uint64(len(data))
	if err := b.checkRange("WriteBuffer", off, n, UsageCopyDst); err != nil {
		return err
	}
	if off%4 != 0 || (n%4 != 0 && off+n != b.size) {
		return errorf("WriteBuffer", b.label, "offset %d and length %d must be multiples of 4 (the length may end the buffer)", off, n)
	}
	for len(data) > 0 {
		c := min(len(data), writeChunk)
		padded := align4(uint64(c))
		d.ensureUpload(int(padded))
		d.jsCalls += 2
		js.CopyBytesToJS(d.upload, data[:c])
		if padded != uint64(c) {
			// The tail word lies in the allocation's padding; zero it.
			d.jsCalls++
			d.upload.Call("fill", 0, c, padded)
		}
		d.rt.Call("write", b.h, float64(off), int(padded))
		data = data[c:]
		off += uint64(c)
	}
	return nil
}

// WriteBufferFromJS writes a JavaScript typed array (for example a fetched
// chunk of a weight shard) into b at off without copying it through Go.
func (d *Device) WriteBufferFromJS(b *Buffer, off uint64, src js.Value) error {
	if err := d.Lost(); err != nil {
		return err
	}
	n := uint64(src.Get("byteLength").Int())
	if err := b.checkRange("WriteBufferFromJS", off, n, UsageCopyDst); err != nil {
		return err
	}
	if off%4 != 0 || n%4 != 0 {
		return errorf("WriteBufferFromJS", b.label, "offset %d and length %d must be multiples of 4", off, n)
	}
	return try("WriteBufferFromJS", func() { d.rt.Call("writeFrom", b.h, float64(off), src) })
}

// ensureUpload grows the runtime's upload array to at least n bytes.
func (d *Device) ensureUpload(n int) {
	if n <= d.uploadCap {
		return
	}
	d.jsCalls++
	d.upload = d.rt.Call("uploadBuffer", n)
	d.uploadCap = d.upload.Length()
}

// ReadBuffer copies len(dst) bytes of b from off into dst, waiting for all
// work submitted before it. Any offset and length within the buffer work.
func (d *Device) ReadBuffer(b *Buffer, off uint64, dst []byte) error {
	return d.RunRead(nil, nil, b, off, dst)
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }
