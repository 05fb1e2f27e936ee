//go:build js

package webgpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"syscall/js"
)

// Program opcodes; runtime.js decodes the same values.
const (
	opPipeline         = 1 // pipeline
	opBind             = 2 // group, bind group
	opDispatch         = 3 // x, y, z
	opDispatchIndirect = 4 // buffer, offset
	opCopy             = 5 // src, srcOff, dst, dstOff, size
	opClear            = 6 // buffer, offset, size
	opWrite            = 7 // dst, dstOff, uploadOff, size
)

// Recorder builds a Program. Its methods record the first error, which
// Finish returns, so a builder can call them without checking each.
type Recorder struct {
	d          *Device
	label      string
	ops        []uint32
	dispatches int
	upload     int // bytes of upload the program's writes read
	pipeline   bool
	err        error
}

// NewRecorder starts an empty program.
func (d *Device) NewRecorder(label string) *Recorder {
	return &Recorder{d: d, label: label}
}

func (r *Recorder) fail(format string, args ...any) {
	if r.err == nil {
		r.err = &UsageError{Op: "Recorder", Label: r.label, Msg: fmt.Sprintf(format, args...)}
	}
}

// word appends v, failing when it does not fit the replayer's 32-bit words.
func (r *Recorder) word(what string, v uint64) uint32 {
	if v > math.MaxUint32 {
		r.fail("%s %d does not fit in 32 bits", what, v)
	}
	return uint32(v)
}

// SetPipeline selects the pipeline for the following dispatches.
func (r *Recorder) SetPipeline(p *Pipeline) {
	r.pipeline = true
	r.ops = append(r.ops, opPipeline, uint32(p.h))
}

// SetBindGroup binds g at group index i for the following dispatches.
func (r *Recorder) SetBindGroup(i int, g *BindGroup) {
	if i < 0 || i >= r.d.Limits.MaxBindGroups {
		r.fail("bind group index %d outside [0, %d)", i, r.d.Limits.MaxBindGroups)
		return
	}
	r.ops = append(r.ops, opBind, uint32(i), uint32(g.h))
}

// Dispatch runs x*y*z workgroups of the current pipeline.
func (r *Recorder) Dispatch(x, y, z int) {
	max := r.d.Limits.MaxComputeWorkgroupsPerDimension
	if !r.pipeline {
		r.fail("dispatch %d before any SetPipeline", r.dispatches)
	}
	if x < 0 || y < 0 || z < 0 || x > max || y > max || z > max {
		r.fail("dispatch %d: workgroups (%d, %d, %d) outside [0, %d] per dimension", r.dispatches, x, y, z, max)
		return
	}
	r.dispatches++
	r.ops = append(r.ops, opDispatch, uint32(x), uint32(y), uint32(z))
}

// DispatchIndirect runs the workgroup counts found at off in b (three u32),
// e.g. written by an earlier kernel.
func (r *Recorder) DispatchIndirect(b *Buffer, off uint64) {
	if !r.pipeline {
		r.fail("dispatch %d before any SetPipeline", r.dispatches)
	}
	if err := b.checkRange("DispatchIndirect", off, 12, UsageIndirect); err != nil {
		r.fail("%v", err)
		return
	}
	if off%4 != 0 {
		r.fail("indirect offset %d is not a multiple of 4", off)
	}
	r.dispatches++
	r.ops = append(r.ops, opDispatchIndirect, uint32(b.h), r.word("offset", off))
}

// Copy copies n bytes from src at srcOff to dst at dstOff. Offsets and n are
// multiples of 4; the copy ends the current compute pass.
func (r *Recorder) Copy(src *Buffer, srcOff uint64, dst *Buffer, dstOff, n uint64) {
	if err := src.checkCopy("Copy", srcOff, n, UsageCopySrc); err != nil {
		r.fail("%v", err)
		return
	}
	if err := dst.checkCopy("Copy", dstOff, n, UsageCopyDst); err != nil {
		r.fail("%v", err)
		return
	}
	r.ops = append(r.ops, opCopy, uint32(src.h), r.word("offset", srcOff), uint32(dst.h), r.word("offset", dstOff), r.word("size", n))
}

// Clear zeroes n bytes of b from off (multiples of 4).
func (r *Recorder) Clear(b *Buffer, off, n uint64) {
	if err := b.checkCopy("Clear", off, n, UsageCopyDst); err != nil {
		r.fail("%v", err)
		return
	}
	r.ops = append(r.ops, opClear, uint32(b.h), r.word("offset", off), r.word("size", n))
}

// Write copies upload[uploadOff:uploadOff+n] of the Run call into dst at
// dstOff (multiples of 4). Like queue.writeBuffer, it lands before all of the
// program's GPU work, wherever it sits in the list: use it for the step's
// uniforms (position, token id).
func (r *Recorder) Write(dst *Buffer, dstOff uint64, uploadOff, n int) {
	if uploadOff < 0 || n < 0 || uploadOff%4 != 0 {
		r.fail("upload range [%d, %d) is negative or misaligned", uploadOff, uploadOff+n)
		return
	}
	if err := dst.checkCopy("Write", dstOff, uint64(n), UsageCopyDst); err != nil {
		r.fail("%v", err)
		return
	}
	r.upload = max(r.upload, uploadOff+n)
	r.ops = append(r.ops, opWrite, uint32(dst.h), r.word("offset", dstOff), uint32(uploadOff), uint32(n))
}

// checkCopy validates a buffer range for a GPU copy: in range and 4-aligned.
func (b *Buffer) checkCopy(op string, off, n uint64, need BufferUsage) error {
	if b.destroyed {
		return errorf(op, b.label, "buffer was destroyed")
	}
	if b.usage&need != need {
		return errorf(op, b.label, "buffer lacks usage %#x", uint32(need))
	}
	if off%4 != 0 || n%4 != 0 {
		return errorf(op, b.label, "offset %d and size %d must be multiples of 4", off, n)
	}
	if off > b.alloc || n > b.alloc-off {
		return errorf(op, b.label, "range [%d, %d) outside the buffer's %d bytes", off, off+n, b.alloc)
	}
	return nil
}

// Program is a recorded list of GPU work held by the JavaScript replayer.
type Program struct {
	d          *Device
	h          int
	label      string
	dispatches int
	upload     int
	words      int
}

// Label is the program's label.
func (p *Program) Label() string { return p.label }

// Dispatches is the number of dispatches one run of p makes.
func (p *Program) Dispatches() int { return p.dispatches }

// UploadSize is the number of upload bytes a Run of p needs.
func (p *Program) UploadSize() int { return p.upload }

// Finish returns the first recording error, or copies the list into the
// replayer once and returns the Program.
func (r *Recorder) Finish() (*Program, error) {
	if r.err != nil {
		return nil, r.err
	}
	if err := r.d.Lost(); err != nil {
		return nil, err
	}
	b := make([]byte, 4*len(r.ops))
	for i, w := range r.ops {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	u8 := js.Global().Get("Uint8Array").New(len(b))
	js.CopyBytesToJS(u8, b)
	h := r.d.rt.Call("addProgram", r.label, u8).Int()
	return &Program{d: r.d, h: h, label: r.label, dispatches: r.dispatches, upload: r.upload, words: len(r.ops)}, nil
}

// Free releases the program's list in the replayer.
func (p *Program) Free() {
	if p.h != 0 {
		p.d.rt.Call("freeProgram", p.h)
		p.h = 0
	}
}

// Run replays p in one command buffer and submits it once. upload holds the
// bytes the program's Write ops read (at least p.UploadSize()). It does not
// wait for the GPU; errors WebGPU reports later come back from a later call.
// Cost: one call into JavaScript, two with a non-empty upload.
func (d *Device) Run(p *Program, upload []byte) error {
	if err := d.prepare(p, upload); err != nil {
		return err
	}
	d.jsCalls++
	n := d.rt.Call("run", p.h, 0, 0, 0, 0, 0).Int()
	if n < 0 {
		return d.Lost()
	}
	return d.takeErrors(n)
}

// RunRead is Run followed, in the same submit, by a copy of len(dst) bytes of
// src from off into dst; it waits for the GPU. p may be nil to only read.
// Any offset and length within src work. Cost: two calls into JavaScript
// (three with an upload) and one await, whatever the program's size.
func (d *Device) RunRead(p *Program, upload []byte, src *Buffer, off uint64, dst []byte) error {
	if err := d.prepare(p, upload); err != nil {
		return err
	}
	n := uint64(len(dst))
	if err := src.checkRange("RunRead", off, n, UsageCopySrc); err != nil {
		return err
	}
	if n == 0 {
		if p == nil {
			return nil
		}
		return d.Run(p, upload)
	}
	r, err := d.startRead(p, src, off, int(n))
	if err != nil {
		return err
	}
	return r.Wait(dst)
}

// prepare checks p and copies upload into the runtime's upload array.
func (d *Device) prepare(p *Program, upload []byte) error {
	if err := d.Lost(); err != nil {
		return err
	}
	if p == nil {
		return nil
	}
	if p.h == 0 {
		return errorf("Run", p.label, "program was freed")
	}
	if len(upload) < p.upload {
		return errorf("Run", p.label, "upload has %d bytes, the program reads %d", len(upload), p.upload)
	}
	if len(upload) > 0 {
		d.ensureUpload(len(upload))
		d.jsCalls++
		js.CopyBytesToJS(d.upload, upload)
	}
	return nil
}
