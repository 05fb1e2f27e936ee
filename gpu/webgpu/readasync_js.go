//go:build js

package webgpu

import (
	"slices"
	"syscall/js"
)

// maxInflight bounds the readbacks and syncs submitted and not yet waited
// for.
const maxInflight = 8

// PendingRead is a readback submitted and not yet waited for
// (RunReadAsync): its program and copy are queued on the GPU, and work
// submitted after it runs behind it, so a decode step can be submitted
// before the previous one's token is read.
type PendingRead struct {
	d    *Device
	seq  int
	n    int
	done bool
	msg  doneMsg
}

// RunReadAsync is RunRead without the wait: it submits p and a copy of n
// bytes of src from off, and returns at once. Wait returns the bytes. The
// GPU runs the reads' work in submission order; their completions may come
// in another order (Firefox), each with its sequence number and its own
// bytes, and Wait keeps the ones it receives for other reads.
func (d *Device) RunReadAsync(p *Program, upload []byte, src *Buffer, off uint64, n int) (*PendingRead, error) {
	if err := d.prepare(p, upload); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, errorf("RunReadAsync", src.label, "reads %d bytes", n)
	}
	if err := src.checkRange("RunReadAsync", off, uint64(n), UsageCopySrc); err != nil {
		return nil, err
	}
	if len(d.inflight) >= maxInflight-1 {
		return nil, errorf("RunReadAsync", src.label, "%d readbacks already pending", len(d.inflight))
	}
	return d.startRead(p, src, off, n)
}

// startRead submits p (nil: none) and the readback.
func (d *Device) startRead(p *Program, src *Buffer, off uint64, n int) (*PendingRead, error) {
	aoff := off &^ 3
	alen := align4(off+uint64(n)) - aoff
	ph := 0
	if p != nil {
		ph = p.h
	}
	r := d.expect(n)
	d.jsCalls++
	if d.rt.Call("run", ph, src.h, float64(aoff), float64(alen), int(off-aoff), n, r.seq).Int() < 0 {
		d.await(r)
		return nil, d.Lost()
	}
	return r, nil
}

// expect registers the next completion the runtime will report.
func (d *Device) expect(n int) *PendingRead {
	r := &PendingRead{d: d, seq: d.seq, n: n}
	d.seq++
	d.inflight = append(d.inflight, r)
	return r
}

// await receives completions until r's has come, keeping each with the
// read it belongs to.
func (d *Device) await(r *PendingRead) doneMsg {
	for !r.done {
		m := <-d.done
		i := slices.IndexFunc(d.inflight, func(p *PendingRead) bool { return p.seq == m.seq })
		if i < 0 {
			continue // not a completion anything waits for
		}
		p := d.inflight[i]
		d.inflight = slices.Delete(d.inflight, i, i+1)
		p.msg, p.done = m, true
	}
	return r.msg
}

// Wait waits for the readback and copies its bytes into dst (len(dst) must
// be the n of RunReadAsync). A second Wait returns the same bytes.
func (r *PendingRead) Wait(dst []byte) error {
	if len(dst) != r.n {
		return errorf("Wait", "", "dst has %d bytes, the readback %d", len(dst), r.n)
	}
	m := r.d.await(r)
	if err := r.d.doneErr(m, "RunRead"); err != nil {
		return err
	}
	if m.view.Type() != js.TypeObject {
		return errorf("Wait", "", "the readback returned no bytes")
	}
	r.d.jsCalls++
	js.CopyBytesToGo(dst, m.view)
	return nil
}
