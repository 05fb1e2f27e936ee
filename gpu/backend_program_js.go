//go:build js

package gpu

import (
	"fmt"
	"slices"

	"wasmllm/gpu/webgpu"
)

type cmdKind uint8

const (
	cmdDispatch cmdKind = iota + 1
	cmdCopy
	cmdWrite
)

// cmd is one pending command. Dispatch: k, bg, x, y, z. Copy: src, srcOff,
// dst, dstOff, n. Write: dst, dstOff, n bytes from upload offset up.
type cmd struct {
	kind           cmdKind
	k              *kernel
	bg             *webgpu.BindGroup
	x, y, z        int
	src, dst       *webgpu.Buffer
	srcOff, dstOff uint64
	n              uint64
	up             int
}

// cachedProg is a recorded program and the command list it was made from.
type cachedProg struct {
	cmds []cmd
	prog *webgpu.Program
	used uint64
}

func (b *Backend) push(c cmd) {
	if c.kind != cmdWrite {
		b.writes = false
	}
	if c.kind == cmdDispatch {
		b.counters.Dispatches++
	}
	b.pending = append(b.pending, c)
}

// beginWrite reserves n bytes of the step's upload and returns their offset.
// A program's writes land before all of its GPU work, so a write after a
// dispatch first submits what is pending.
func (b *Backend) beginWrite(n int) int {
	if len(b.pending) > 0 && !b.writes {
		if err := b.flush(nil, nil, 0); err != nil {
			b.fail(err)
		}
	}
	if len(b.pending) == 0 {
		b.writes = true
		b.upload = b.upload[:0]
	}
	off := len(b.upload)
	need := off + (n+3)&^3
	if cap(b.upload) < need {
		nb := make([]byte, need, 2*need)
		copy(nb, b.upload)
		b.upload = nb
	}
	b.upload = b.upload[:need]
	return off
}

// readBuf returns a reusable host buffer of n bytes.
func (b *Backend) readBuf(n int) []byte {
	if cap(b.rbuf) < n {
		b.rbuf = make([]byte, n)
	}
	return b.rbuf[:n]
}

// flush submits the pending commands as one program (recorded once per
// distinct list, then replayed) and, when src is set, reads len(dst) bytes
// of it from off in the same submit.
func (b *Backend) flush(src *webgpu.Buffer, dst []byte, off uint64) error {
	prog, upload, err := b.takeProgram()
	if err != nil {
		return err
	}
	if src != nil {
		err = b.d.RunRead(prog, upload, src, off, dst)
	} else if prog != nil {
		err = b.d.Run(prog, upload)
	}
	b.upload = b.upload[:0]
	b.writes = false
	return err
}

// takeProgram empties the pending list into its program (nil when none)
// and returns it with the step's upload, which stays valid until the next
// command is recorded.
func (b *Backend) takeProgram() (*webgpu.Program, []byte, error) {
	if err := b.takeErr(); err != nil {
		b.pending, b.upload = b.pending[:0], b.upload[:0]
		return nil, nil, err
	}
	var prog *webgpu.Program
	if len(b.pending) > 0 {
		var err error
		if prog, err = b.program(); err != nil {
			b.pending, b.upload = b.pending[:0], b.upload[:0]
			return nil, nil, err
		}
		b.counters.Flushes++
		b.counters.Commands += int64(len(b.pending))
	}
	b.pending = b.pending[:0]
	return prog, b.upload, nil
}

// program finds or records the program for the pending list.
func (b *Backend) program() (*webgpu.Program, error) {
	h := hashCmds(b.pending)
	b.tick++
	for _, cp := range b.progs[h] {
		if slices.Equal(cp.cmds, b.pending) {
			cp.used = b.tick
			return cp.prog, nil
		}
	}
	rec := b.d.NewRecorder(fmt.Sprintf("step %d cmds", len(b.pending)))
	var last *kernel
	for i := range b.pending {
		c := &b.pending[i]
		switch c.kind {
		case cmdDispatch:
			if c.k != last {
				rec.SetPipeline(c.k.pipe)
				last = c.k
			}
			rec.SetBindGroup(0, c.bg)
			rec.Dispatch(c.x, c.y, c.z)
		case cmdCopy:
			rec.Copy(c.src, c.srcOff, c.dst, c.dstOff, c.n)
			last = nil
		case cmdWrite:
			rec.Write(c.dst, c.dstOff, c.up, int(c.n))
		}
	}
	prog, err := rec.Finish()
	if err != nil {
		return nil, err
	}
	b.counters.ProgramBuilds++
	if b.nprogs >= b.opts.MaxPrograms {
		b.evictProgram()
	}
	b.progs[h] = append(b.progs[h], &cachedProg{cmds: append([]cmd(nil), b.pending...), prog: prog, used: b.tick})
	b.nprogs++
	return prog, nil
}

func (b *Backend) evictProgram() {
	var oldest *cachedProg
	var key uint64
	for h, list := range b.progs {
		for _, cp := range list {
			if oldest == nil || cp.used < oldest.used {
				oldest, key = cp, h
			}
		}
	}
	if oldest == nil {
		return
	}
	list := b.progs[key]
	for i, cp := range list {
		if cp == oldest {
			b.progs[key] = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(b.progs[key]) == 0 {
		delete(b.progs, key)
	}
	oldest.prog.Free()
	b.nprogs--
}

// dropCaches forgets every program and bind group, after a buffer they may
// reference was destroyed.
func (b *Backend) dropCaches() {
	for _, list := range b.progs {
		for _, cp := range list {
			cp.prog.Free()
		}
	}
	b.progs = map[uint64][]*cachedProg{}
	b.nprogs = 0
	b.groups = map[groupKey]*webgpu.BindGroup{}
}

func hashCmds(cs []cmd) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) { h = (h ^ v) * 1099511628211 }
	for i := range cs {
		c := &cs[i]
		mix(uint64(c.kind))
		if c.bg != nil {
			mix(uint64(c.bg.ID()))
		}
		mix(uint64(c.x)<<32 | uint64(c.y)<<16 | uint64(c.z))
		if c.src != nil {
			mix(uint64(c.src.ID()))
		}
		if c.dst != nil {
			mix(uint64(c.dst.ID()))
		}
		mix(c.srcOff ^ c.dstOff<<20 ^ c.n<<40 ^ uint64(c.up))
	}
	return h
}
