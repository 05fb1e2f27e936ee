//go:build js

package gpu

import (
	"fmt"

	"wasmllm/gpu/webgpu"
	"wasmllm/shaders"
)

// kernelKey names a pipeline: a shader file, its entry point and up to five
// override constants.
type kernelKey struct {
	file, entry string
	consts      [5]constant
}

type constant struct {
	name  string
	value float64
}

// kernel is a compiled pipeline with its bind group layout, as the entry
// point's WGSL declares it (shaders.Parse): nbind buffers (bindings
// 0..nbind-1, read-only or read-write storage) then the uniform Params at
// binding nbind.
type kernel struct {
	key   kernelKey
	pipe  *webgpu.Pipeline
	bgl   *webgpu.BindGroupLayout
	nbind int
}

// module is a compiled shader file and the interface read from its source.
type module struct {
	sm    *webgpu.ShaderModule
	iface *shaders.Module
}

// pipelineCache is the compiled shader modules and pipelines of one device,
// by shader file, entry point, override constants and the shader features
// the source was built with. Each Backend has its own unless
// BackendOptions.pipelines shares one between the backends of a device
// (the tests: a kernel compiles once per test binary, not once per test).
type pipelineCache struct {
	d       *webgpu.Device
	modules map[moduleKey]*module
	kernels map[featKernel]*kernel
}

type moduleKey struct {
	file string
	feat shaders.Features
}

type featKernel struct {
	key  kernelKey
	feat shaders.Features
}

// newPipelineCache is an empty cache for the pipelines of d.
func newPipelineCache(d *webgpu.Device) *pipelineCache {
	return &pipelineCache{d: d, modules: map[moduleKey]*module{}, kernels: map[featKernel]*kernel{}}
}

// bind is a buffer binding; size 0 means to the end of the buffer.
type bind struct {
	buf       *webgpu.Buffer
	off, size uint64
}

type groupKey struct {
	k *kernel
	b [maxBindings]bind
	p Params
}

// kernelOf is a compiled kernel whose uniform struct is P; the zero value
// (a kernel that failed to compile) dispatches nothing.
type kernelOf[P any] struct{ k *kernel }

// use returns the kernel of s with the given override constants (at most
// five), compiling it on first use.
func use[P any](b *Backend, s kernelSpec[P], consts ...constant) (kernelOf[P], error) {
	key := kernelKey{file: s.file, entry: s.entry}
	if len(consts) > len(key.consts) {
		return kernelOf[P]{}, fmt.Errorf("gpu: %s:%s: %d override constants; at most %d", s.file, s.entry, len(consts), len(key.consts))
	}
	copy(key.consts[:], consts)
	k, err := b.kernel(key)
	if err != nil {
		return kernelOf[P]{}, err
	}
	return kernelOf[P]{k}, nil
}

// dispatch records one dispatch of k with params p (see Backend.dispatch).
func (k kernelOf[P]) dispatch(b *Backend, p P, x, y, z int, binds ...bind) {
	b.dispatch(k.k, packParams(&p), x, y, z, binds...)
}

// kernel returns the pipeline for key, compiling it on first use, with the
// bind group layout its entry point declares. The op's WGSL file is followed
// by shaders/common.wgsl, so compile errors keep the op file's line numbers.
func (b *Backend) kernel(key kernelKey) (*kernel, error) {
	feat := shaders.Features{Subgroups: b.d.Features.Subgroups, F16: b.d.Features.ShaderF16, F16Math: b.tune.f16math}
	fk := featKernel{key: key, feat: feat}
	if k, ok := b.pipes.kernels[fk]; ok {
		return k, nil
	}
	mk := moduleKey{file: key.file, feat: feat}
	mod, ok := b.pipes.modules[mk]
	if !ok {
		src, err := shaders.Build(key.file, feat)
		if err != nil {
			return nil, err
		}
		iface, err := shaders.Parse(shaders.Path(key.file), src)
		if err != nil {
			return nil, err
		}
		sm, err := b.d.CreateShaderModule(shaders.Path(key.file), src)
		if err != nil {
			return nil, err
		}
		mod = &module{sm: sm, iface: iface}
		b.pipes.modules[mk] = mod
	}
	label := key.file + ":" + key.entry
	e, ok := mod.iface.Entries[key.entry]
	if !ok {
		return nil, fmt.Errorf("gpu: %s has no @compute entry point %s", shaders.Path(key.file), key.entry)
	}
	nbind := len(e.Bindings) - 1
	if nbind < 0 || e.Bindings[nbind].Access != shaders.Uniform || nbind > maxBindings {
		return nil, fmt.Errorf("gpu: %s: want at most %d storage bindings and then the uniform params", label, maxBindings)
	}
	types := make([]webgpu.BindingType, nbind+1)
	for i, bd := range e.Bindings {
		switch bd.Access {
		case shaders.Read:
			types[i] = webgpu.ReadOnlyStorage
		case shaders.ReadWrite:
			types[i] = webgpu.Storage
		case shaders.Uniform:
			types[i] = webgpu.Uniform
		}
	}
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
	pipe, err := b.d.CreateComputePipeline(label, mod.sm, key.entry, pl, consts)
	if err != nil {
		return nil, err
	}
	k := &kernel{key: key, pipe: pipe, bgl: bgl, nbind: nbind}
	b.pipes.kernels[fk] = k
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
		entries := make([]webgpu.Binding, 0, len(binds)+1)
		for i, bd := range binds {
			if bd.buf == nil {
				bd.buf = b.dummy
			}
			entries = append(entries, webgpu.Binding{Binding: i, Buffer: bd.buf, Offset: bd.off, Size: bd.size})
		}
		entries = append(entries, webgpu.Binding{Binding: len(binds), Buffer: ub})
		bg, err = b.d.CreateBindGroup(k.key.file+":"+k.key.entry, k.bgl, entries...)
		if err != nil {
			b.fail(err)
			return
		}
		b.groups[key] = bg
	}
	b.push(cmd{kind: cmdDispatch, k: k, bg: bg, x: x, y: y, z: z})
}

func (b *Backend) paramBuffer(p Params) (*webgpu.Buffer, error) {
	if buf, ok := b.params[p]; ok {
		return buf, nil
	}
	buf, err := b.d.CreateBuffer(fmt.Sprintf("params %v", p[:4]), 64, webgpu.UsageUniform)
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
func (b *Backend) copyBytes(src *webgpu.Buffer, srcOff uint64, dst *webgpu.Buffer, dstOff, n uint64) {
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
