//go:build js

package gpu

import (
	"fmt"

	"wasmllm/shaders"
)

// Params is a kernel's uniform block: up to 16 words, each kernel naming
// them in its own WGSL struct. Floats go in as math.Float32bits.
type Params [16]uint32

// kernelKey names a pipeline: a shader file, its entry point and up to four
// override constants.
type kernelKey struct {
	file, entry string
	consts      [4]constant
}

type constant struct {
	name  string
	value float64
}

// kernel is a compiled pipeline with its bind group layout: nbind buffers
// (bindings 0..nbind-1: read-only storage unless writable) then the uniform
// Params at binding nbind.
type kernel struct {
	key   kernelKey
	pipe  *Pipeline
	bgl   *BindGroupLayout
	nbind int
}

// bind is a buffer binding; size 0 means to the end of the buffer.
type bind struct {
	buf       *Buffer
	off, size uint64
}

type groupKey struct {
	k *kernel
	b [maxBindings]bind
	p Params
}

const maxBindings = 10

// kernel returns the pipeline for key, compiling it on first use. writable
// lists the bindings the kernel writes. The op's WGSL file is followed by
// shaders/common.wgsl, so compile errors keep the op file's line numbers.
func (b *Backend) kernel(key kernelKey, nbind int, writable ...int) (*kernel, error) {
	if k, ok := b.kernels[key]; ok {
		return k, nil
	}
	mod, ok := b.modules[key.file]
	if !ok {
		src, err := shaders.Build(key.file, shaders.Features{Subgroups: b.d.Features.Subgroups, F16: b.d.Features.ShaderF16})
		if err != nil {
			return nil, err
		}
		mod, err = b.d.CreateShaderModule(shaders.Path(key.file), src)
		if err != nil {
			return nil, err
		}
		b.modules[key.file] = mod
	}
	types := make([]BindingType, nbind+1)
	for i := range types[:nbind] {
		types[i] = ReadOnlyStorage
	}
	for _, w := range writable {
		types[w] = Storage
	}
	types[nbind] = Uniform
	label := key.file + ":" + key.entry
	bgl, err := b.d.CreateBindGroupLayout(label, types...)
	if err != nil {
		return nil, err
	}
	pl, err := b.d.CreatePipelineLayout(label, bgl)
	if err != nil {
		return nil, err
	}
	var consts map[string]float64
	for _, c := range key.consts {
		if c.name != "" {
			if consts == nil {
				consts = map[string]float64{}
			}
			consts[c.name] = c.value
		}
	}
	pipe, err := b.d.CreateComputePipeline(label, mod, key.entry, pl, consts)
	if err != nil {
		return nil, err
	}
	k := &kernel{key: key, pipe: pipe, bgl: bgl, nbind: nbind}
	b.kernels[key] = k
	return k, nil
}

// dispatch records one dispatch of k over (x, y, z) workgroups with the given
// bindings and params. Bind groups and uniform buffers are cached, so a
// repeated op allocates nothing.
func (b *Backend) dispatch(k *kernel, p Params, x, y, z int, binds ...bind) {
	if k == nil {
		return
	}
	if len(binds) != k.nbind {
		b.opErr(k.key.file, "%d bindings for a kernel of %d", len(binds), k.nbind)
		return
	}
	maxG := b.d.Limits.MaxComputeWorkgroupsPerDimension
	if x > maxG || y > maxG || z > maxG {
		b.opErr(k.key.file, "dispatch (%d, %d, %d) exceeds %d workgroups per dimension", x, y, z, maxG)
		return
	}
	if x == 0 || y == 0 || z == 0 {
		return
	}
	key := groupKey{k: k, p: p}
	copy(key.b[:], binds)
	bg, ok := b.groups[key]
	if !ok {
		ub, err := b.paramBuffer(p)
		if err != nil {
			b.fail(err)
			return
		}
		entries := make([]Binding, 0, len(binds)+1)
		for i, bd := range binds {
			if bd.buf == nil {
				bd.buf = b.dummy
			}
			entries = append(entries, Binding{Binding: i, Buffer: bd.buf, Offset: bd.off, Size: bd.size})
		}
		entries = append(entries, Binding{Binding: len(binds), Buffer: ub})
		bg, err = b.d.CreateBindGroup(k.key.file+":"+k.key.entry, k.bgl, entries...)
		if err != nil {
			b.fail(err)
			return
		}
		b.groups[key] = bg
	}
	b.push(cmd{kind: cmdDispatch, k: k, bg: bg, x: x, y: y, z: z})
}

func (b *Backend) paramBuffer(p Params) (*Buffer, error) {
	if buf, ok := b.params[p]; ok {
		return buf, nil
	}
	buf, err := b.d.CreateBuffer(fmt.Sprintf("params %v", p[:4]), 64, UsageUniform)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, 64)
	for i, v := range p {
		raw[4*i], raw[4*i+1], raw[4*i+2], raw[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	if err := b.d.WriteBuffer(buf, 0, raw); err != nil {
		return nil, err
	}
	b.params[p] = buf
	return buf, nil
}

// copyBytes records a buffer-to-buffer copy.
func (b *Backend) copyBytes(src *Buffer, srcOff uint64, dst *Buffer, dstOff, n uint64) {
	b.push(cmd{kind: cmdCopy, src: src, srcOff: srcOff, dst: dst, dstOff: dstOff, n: n})
}

// groups2D splits n workgroups into (x, y) within the per-dimension limit.
func (b *Backend) groups2D(n int) (int, int) {
	maxG := b.d.Limits.MaxComputeWorkgroupsPerDimension
	if n <= maxG {
		return n, 1
	}
	y := (n + maxG - 1) / maxG
	return (n + y - 1) / y, y
}
