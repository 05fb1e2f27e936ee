package loading

import (
	"fmt"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
)

// Assembler collects a converted model's tensors shard by shard, as the
// browser loader verifies each shard.
//
// With Upload set, tensors can go to the backend straight from the shard
// (on WebGPU, from the JavaScript bytes into GPU buffers): the Go heap then
// holds none of their bytes, and the weights list them in
// model.Weights.Uploaded.
//
// A tensor in parts over several shards (manifest.TensorInfo.Parts) is
// staged as its parts arrive, in any order, and offered to Upload (or
// taken into Go) once the last one is in.
type Assembler struct {
	// Upload, when set, is offered each tensor for which ResidentOnGPU
	// holds, when its shard arrives (its last part's, for a tensor in
	// parts: its bytes are then the Stager's); it returns the backend
	// tensor, or nil to have the bytes copied into Go instead.
	Upload func(ti *manifest.TensorInfo) (model.Tensor, error)
	// Stager holds the tensors in parts while they arrive (MemStager,
	// Go memory, unless set).
	Stager Stager
	// OnHost names tensors kept in Go memory, never offered to Upload
	// (the per-layer table of a plan with Plan.PerLayerOnHost).
	OnHost map[string]bool

	m        *manifest.Manifest
	source   string
	tensors  map[string]*loader.Tensor
	resident map[string]model.Tensor
	done     []bool
	byShard  [][]piece // the tensor parts in each shard
	arrived  []int     // per tensor, the parts in so far
}

// piece is part p of tensor t, which starts at byte at of the tensor.
type piece struct {
	t, p int
	at   int64
}

// Stager holds the bytes of tensors in parts until the last part is in.
type Stager interface {
	// Stage starts a tensor of n bytes.
	Stage(name string, n int64)
	// Put copies part of the shard being added (read reads it) to byte at
	// of the tensor.
	Put(name string, at int64, part manifest.Part, read func(dst []byte, off int64))
	// Take returns the tensor's bytes, now the caller's, and drops them.
	Take(name string) []byte
	// Drop lets the tensor's bytes go.
	Drop(name string)
}

// MemStager stages tensors in Go memory, by name.
type MemStager map[string][]byte

func (g MemStager) Stage(name string, n int64) { g[name] = make([]byte, n) }
func (g MemStager) Put(name string, at int64, p manifest.Part, read func([]byte, int64)) {
	read(g[name][at:at+p.Bytes], p.Offset)
}
func (g MemStager) Take(name string) []byte { b := g[name]; delete(g, name); return b }
func (g MemStager) Drop(name string)        { delete(g, name) }

// ResidentOnGPU reports whether a tensor is uploaded to WebGPU straight from
// the shard bytes: one in a layout the kernels read as stored (F32, F16,
// planar q8 and q4, K-quant blocks), except those the model reads on the
// host (rope_freqs, LongRoPE's factors: model.OnHost).
func ResidentOnGPU(ti *manifest.TensorInfo) bool {
	d, _ := ti.Type()
	switch d {
	case loader.F32, loader.F16, loader.Q8, loader.Q4:
		return !model.OnHost(ti.Name)
	}
	return kquantOnGPU(d, ti.Shape) // K-quant matrices, as ggml's blocks
}

// NewAssembler starts assembling m; source names the model in messages.
func NewAssembler(m *manifest.Manifest, source string) *Assembler {
	a := &Assembler{m: m, source: source, tensors: make(map[string]*loader.Tensor, len(m.Tensors)), Stager: MemStager{},
		resident: map[string]model.Tensor{}, done: make([]bool, len(m.Shards)), byShard: make([][]piece, len(m.Shards)), arrived: make([]int, len(m.Tensors))}
	for i := range m.Tensors {
		at := int64(0)
		for p, part := range m.Tensors[i].Pieces() {
			a.byShard[part.Shard] = append(a.byShard[part.Shard], piece{t: i, p: p, at: at})
			at += part.Bytes
		}
	}
	return a
}

// AddShard copies the tensors of shard i out of the verified shard, whose
// length is n; read copies len(dst) bytes from offset off.
func (a *Assembler) AddShard(i int, n int64, read func(dst []byte, off int64)) error {
	if i < 0 || i >= len(a.m.Shards) {
		return fmt.Errorf("loader: shard index %d of %d", i, len(a.m.Shards))
	}
	s := &a.m.Shards[i]
	if n != s.Bytes {
		return &ShardSizeError{File: s.File, Bytes: n, Want: s.Bytes}
	}
	if a.done[i] {
		return nil
	}
	for _, pc := range a.byShard[i] {
		ti := &a.m.Tensors[pc.t]
		if len(ti.Parts) > 0 {
			if err := a.addPart(ti, pc, read); err != nil {
				return err
			}
			continue
		}
		uploaded, err := a.offer(ti)
		if err != nil {
			return err
		}
		if uploaded {
			continue
		}
		// ti.Bytes lies within the shard (manifest.Validate) whose length
		// was just checked.
		data := make([]byte, ti.Bytes)
		read(data, ti.Offset)
		a.keep(ti, data)
	}
	a.done[i] = true
	return nil
}

// addPart stages one part of a tensor in parts, and hands the tensor on
// once its last part is in.
func (a *Assembler) addPart(ti *manifest.TensorInfo, pc piece, read func(dst []byte, off int64)) error {
	if a.arrived[pc.t] == 0 {
		a.Stager.Stage(ti.Name, ti.Bytes)
	}
	a.Stager.Put(ti.Name, pc.at, ti.Parts[pc.p], read)
	if a.arrived[pc.t]++; a.arrived[pc.t] < len(ti.Parts) {
		return nil
	}
	uploaded, err := a.offer(ti)
	if uploaded || err != nil {
		a.Stager.Drop(ti.Name)
		return err
	}
	a.keep(ti, a.Stager.Take(ti.Name))
	return nil
}

// offer hands ti to Upload when it goes to the backend straight; it
// reports whether Upload took it.
func (a *Assembler) offer(ti *manifest.TensorInfo) (bool, error) {
	if a.Upload == nil || !ResidentOnGPU(ti) || a.OnHost[ti.Name] {
		return false, nil
	}
	t, err := a.Upload(ti)
	if err != nil || t == nil {
		return false, err
	}
	a.resident[ti.Name] = t
	return true, nil
}

// keep holds ti's bytes in Go.
func (a *Assembler) keep(ti *manifest.TensorInfo, data []byte) {
	d, _ := ti.Type()
	a.tensors[ti.Name] = &loader.Tensor{Name: ti.Name, DType: d, Shape: append([]int(nil), ti.Shape...), Data: data}
}

// Weights returns the model's canonical weights once every shard is in.
func (a *Assembler) Weights() (*model.Weights, error) {
	for i, ok := range a.done {
		if !ok {
			return nil, fmt.Errorf("loader: shard %s was never delivered", a.m.Shards[i].File)
		}
	}
	for i := range a.m.Tensors {
		if ti := &a.m.Tensors[i]; a.resident[ti.Name] != nil {
			d, _ := ti.Type()
			a.tensors[ti.Name] = &loader.Tensor{Name: ti.Name, DType: d, Shape: append([]int(nil), ti.Shape...)}
		}
	}
	if err := a.stack(); err != nil {
		return nil, &ModelError{Msg: err.Error(), Err: err}
	}
	w := &model.Weights{Config: a.m.Config, Tensors: a.tensors, Uploaded: a.resident, Source: a.source}
	if err := w.Check(); err != nil {
		return nil, &ModelError{Msg: err.Error(), Err: err}
	}
	return w, nil
}

// stack makes each stacked tensor (manifest.TensorInfo.Stack) a
// loader.Mixed one of its row blocks, which leave the table under their
// own names (a block on the backend stays in Uploaded by its name).
func (a *Assembler) stack() error {
	for i := range a.m.Tensors {
		ti := &a.m.Tensors[i]
		if len(ti.Stack) == 0 {
			continue
		}
		blocks := make([]*loader.Tensor, len(ti.Stack))
		for k, name := range ti.Stack {
			if blocks[k] = a.tensors[name]; blocks[k] == nil {
				return fmt.Errorf("loader: row block %s of %s never arrived", name, ti.Name)
			}
		}
		t, err := loader.Stacked(ti.Name, blocks)
		if err != nil {
			return err
		}
		for _, name := range ti.Stack {
			delete(a.tensors, name)
		}
		a.tensors[ti.Name] = t
	}
	return nil
}
