//go:build js

package webgpu

import (
	"context"
	"strings"
	"syscall/js"
	"wasmllm/internal/jsutil"
)

// ShaderModule is a compiled WGSL module.
type ShaderModule struct {
	v    js.Value
	name string
}

// CreateShaderModule compiles WGSL source. name (e.g. "shaders/matmul.wgsl")
// labels the module and prefixes compile errors, which come back as a
// *ShaderError with line, column and the offending source line.
func (d *Device) CreateShaderModule(name, code string) (*ShaderModule, error) {
	if err := d.Lost(); err != nil {
		return nil, err
	}
	var mod, done js.Value
	err := try("CreateShaderModule "+name, func() {
		d.dev.Call("pushErrorScope", "validation")
		mod = d.dev.Call("createShaderModule", map[string]any{"label": name, "code": code})
		done = js.Global().Get("Promise").Call("all", []any{mod.Call("getCompilationInfo"), d.dev.Call("popErrorScope")})
	})
	if err != nil {
		return nil, err
	}
	res, err := jsutil.Await(context.Background(), done)
	if err != nil {
		return nil, &ShaderError{File: name, Messages: []CompileMessage{{Type: "error", Text: err.Error()}}}
	}
	lines := strings.Split(code, "\n")
	var serr ShaderError
	serr.File = name
	msgs := res.Index(0).Get("messages")
	failed := false
	for i := 0; i < msgs.Length(); i++ {
		m := msgs.Index(i)
		cm := CompileMessage{
			Type: jsStr(m, "type"),
			Line: int(jsNum(m, "lineNum")),
			Col:  int(jsNum(m, "linePos")),
			Text: jsStr(m, "message"),
		}
		if cm.Line >= 1 && cm.Line <= len(lines) {
			cm.Src = strings.TrimRight(lines[cm.Line-1], "\r")
		}
		if cm.Type == "error" {
			failed = true
		}
		serr.Messages = append(serr.Messages, cm)
	}
	if scopeErr := res.Index(1); scopeErr.Truthy() && !failed {
		failed = true
		serr.Messages = append(serr.Messages, CompileMessage{Type: "error", Text: jsStr(scopeErr, "message")})
	}
	if failed {
		return nil, &serr
	}
	return &ShaderModule{v: mod, name: name}, nil
}

// BindingType is the kind of a buffer binding in a bind group layout.
type BindingType int

// Buffer binding types.
const (
	ReadOnlyStorage BindingType = iota // var<storage, read>
	Storage                            // var<storage, read_write>
	Uniform                            // var<uniform>
)

func (t BindingType) js() string {
	switch t {
	case Storage:
		return "storage"
	case Uniform:
		return "uniform"
	}
	return "read-only-storage"
}

// BindGroupLayout is a GPUBindGroupLayout.
type BindGroupLayout struct {
	v     js.Value
	label string
	types []BindingType // nil for a layout taken from an auto-layout pipeline
}

// CreateBindGroupLayout makes a compute-stage layout whose binding i has
// types[i].
func (d *Device) CreateBindGroupLayout(label string, types ...BindingType) (*BindGroupLayout, error) {
	if err := d.Lost(); err != nil {
		return nil, err
	}
	storage := 0
	entries := make([]any, len(types))
	for i, t := range types {
		if t != Uniform {
			storage++
		}
		entries[i] = map[string]any{"binding": i, "visibility": 4, "buffer": map[string]any{"type": t.js()}} // 4: GPUShaderStage.COMPUTE
	}
	if storage > d.Limits.MaxStorageBuffersPerShaderStage {
		return nil, &LimitError{Label: label, Limit: "maxStorageBuffersPerShaderStage", Need: uint64(storage), Have: uint64(d.Limits.MaxStorageBuffersPerShaderStage)}
	}
	l := &BindGroupLayout{label: label, types: types}
	err := try("CreateBindGroupLayout "+label, func() {
		l.v = d.dev.Call("createBindGroupLayout", map[string]any{"label": label, "entries": entries})
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// PipelineLayout is a GPUPipelineLayout.
type PipelineLayout struct {
	v js.Value
}

// CreatePipelineLayout makes a layout from bind group layouts 0, 1, ...
func (d *Device) CreatePipelineLayout(label string, groups ...*BindGroupLayout) (*PipelineLayout, error) {
	if err := d.Lost(); err != nil {
		return nil, err
	}
	if len(groups) > d.Limits.MaxBindGroups {
		return nil, &LimitError{Label: label, Limit: "maxBindGroups", Need: uint64(len(groups)), Have: uint64(d.Limits.MaxBindGroups)}
	}
	ls := make([]any, len(groups))
	for i, g := range groups {
		ls[i] = g.v
	}
	p := &PipelineLayout{}
	err := try("CreatePipelineLayout "+label, func() {
		p.v = d.dev.Call("createPipelineLayout", map[string]any{"label": label, "bindGroupLayouts": ls})
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Pipeline is a GPUComputePipeline registered with the program replayer.
type Pipeline struct {
	v     js.Value
	h     int
	label string
}

// Label is the pipeline's label.
func (p *Pipeline) Label() string { return p.label }

// CreateComputePipeline builds a compute pipeline for entry in m. A nil
// layout asks WebGPU for an automatic one; constants override WGSL
// override declarations. It waits for the pipeline, so errors name it.
func (d *Device) CreateComputePipeline(label string, m *ShaderModule, entry string, layout *PipelineLayout, constants map[string]float64) (*Pipeline, error) {
	if err := d.Lost(); err != nil {
		return nil, err
	}
	compute := map[string]any{"module": m.v, "entryPoint": entry}
	if len(constants) > 0 {
		c := map[string]any{}
		for k, v := range constants {
			c[k] = v
		}
		compute["constants"] = c
	}
	desc := map[string]any{"label": label, "compute": compute, "layout": "auto"}
	if layout != nil {
		desc["layout"] = layout.v
	}
	var promise js.Value
	if err := try("CreateComputePipeline "+label, func() {
		promise = d.dev.Call("createComputePipelineAsync", desc)
	}); err != nil {
		return nil, err
	}
	v, err := jsutil.Await(context.Background(), promise)
	if err != nil {
		if lerr := d.Lost(); lerr != nil {
			return nil, lerr
		}
		return nil, &GPUError{Kind: "validation", Label: label + " (" + m.name + ")", Message: err.Error()}
	}
	return &Pipeline{v: v, h: d.rt.Call("addPipeline", v).Int(), label: label}, nil
}

// BindGroupLayout returns the layout of group i of the pipeline, as WebGPU
// derived it for an automatic layout.
func (p *Pipeline) BindGroupLayout(i int) (*BindGroupLayout, error) {
	l := &BindGroupLayout{label: p.label}
	err := try("BindGroupLayout "+p.label, func() { l.v = p.v.Call("getBindGroupLayout", i) })
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Binding is one buffer binding of a bind group: Size bytes of Buffer from
// Offset; Size 0 means to the end of the buffer.
type Binding struct {
	Binding int
	Buffer  *Buffer
	Offset  uint64
	Size    uint64
}

// BindGroup is a GPUBindGroup registered with the program replayer.
type BindGroup struct {
	h     int
	label string
}

// ID is the bind group's handle in the replayer: nonzero, and distinct among
// the device's bind groups, for hashing lists of work that use it.
func (g *BindGroup) ID() int { return g.h }

// CreateBindGroup binds buffers for layout. Offsets must respect the device's
// offset alignment, and each binding's size the (possibly lowered) binding
// size limits: a tensor larger than MaxStorageBufferBindingSize must be split.
func (d *Device) CreateBindGroup(label string, layout *BindGroupLayout, entries ...Binding) (*BindGroup, error) {
	if err := d.Lost(); err != nil {
		return nil, err
	}
	flat := make([]any, 0, 2+4*len(entries))
	flat = append(flat, label, layout.v)
	for _, e := range entries {
		b := e.Buffer
		if b == nil || b.destroyed {
			return nil, errorf("CreateBindGroup", label, "binding %d: no buffer, or a destroyed one", e.Binding)
		}
		uniform := b.usage&UsageStorage == 0 && b.usage&UsageUniform != 0
		if layout.types != nil && e.Binding >= 0 && e.Binding < len(layout.types) {
			uniform = layout.types[e.Binding] == Uniform
		}
		align, limit, limitName := uint64(d.Limits.MinStorageBufferOffsetAlignment), d.Limits.MaxStorageBufferBindingSize, "maxStorageBufferBindingSize"
		if uniform {
			align, limit, limitName = uint64(d.Limits.MinUniformBufferOffsetAlignment), d.Limits.MaxUniformBufferBindingSize, "maxUniformBufferBindingSize"
		}
		if e.Offset%align != 0 {
			return nil, errorf("CreateBindGroup", label, "binding %d: offset %d is not a multiple of %d", e.Binding, e.Offset, align)
		}
		if e.Offset >= b.alloc {
			return nil, errorf("CreateBindGroup", label, "binding %d: offset %d is past the end of %q (%d bytes)", e.Binding, e.Offset, b.label, b.size)
		}
		size := e.Size
		if size == 0 {
			size = b.alloc - e.Offset
		}
		if size > b.alloc-e.Offset || size%4 != 0 {
			return nil, errorf("CreateBindGroup", label, "binding %d: size %d from offset %d does not fit %q (%d bytes) or is not a multiple of 4", e.Binding, size, e.Offset, b.label, b.size)
		}
		if size > limit {
			return nil, &LimitError{Label: label, Limit: limitName, Need: size, Have: limit}
		}
		flat = append(flat, e.Binding, b.h, float64(e.Offset), float64(size))
	}
	h := d.rt.Call("createBindGroup", flat...).Int()
	if h == 0 {
		return nil, d.takeErrorsOr("CreateBindGroup", label)
	}
	return &BindGroup{h: h, label: label}, nil
}
