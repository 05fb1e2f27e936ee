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
type Assembler struct {
	// Upload, when set, is offered each tensor for which ResidentOnGPU
	// holds, when its shard arrives; it returns the backend tensor, or nil
	// to have the bytes copied into Go instead.
	Upload func(ti *manifest.TensorInfo) (model.Tensor, error)

	m        *manifest.Manifest
	source   string
	tensors  map[string]*loader.Tensor
	resident map[string]model.Tensor
	done     []bool
	byShard  [][]int // tensor indices per shard
}

// ResidentOnGPU reports whether a tensor is uploaded to WebGPU straight from
// the shard bytes: one in a layout the kernels read as stored (F32, F16,
// planar q8 and q4, K-quant blocks), except rope_freqs, which the model
// reads on the host.
func ResidentOnGPU(ti *manifest.TensorInfo) bool {
	d, _ := ti.Type()
	switch d {
	case loader.F32, loader.F16, loader.Q8, loader.Q4:
		return ti.Name != model.NameRopeFreqs
	}
	return kquantOnGPU(d, ti.Shape) // K-quant matrices, as ggml's blocks
}

// NewAssembler starts assembling m; source names the model in messages.
func NewAssembler(m *manifest.Manifest, source string) *Assembler {
	a := &Assembler{m: m, source: source, tensors: make(map[string]*loader.Tensor, len(m.Tensors)),
		resident: map[string]model.Tensor{}, done: make([]bool, len(m.Shards)), byShard: make([][]int, len(m.Shards))}
	for i, t := range m.Tensors {
		a.byShard[t.Shard] = append(a.byShard[t.Shard], i)
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
	for _, k := range a.byShard[i] {
		ti := &a.m.Tensors[k]
		if a.Upload != nil && ResidentOnGPU(ti) {
			t, err := a.Upload(ti)
			if err != nil {
				return err
			}
			if t != nil {
				a.resident[ti.Name] = t
				continue
			}
		}
		d, _ := ti.Type()
		// ti.Bytes lies within the shard (manifest.Validate) whose length
		// was just checked.
		data := make([]byte, ti.Bytes)
		read(data, ti.Offset)
		a.tensors[ti.Name] = &loader.Tensor{Name: ti.Name, DType: d, Shape: append([]int(nil), ti.Shape...), Data: data}
	}
	a.done[i] = true
	return nil
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
	w := &model.Weights{Config: a.m.Config, Tensors: a.tensors, Uploaded: a.resident, Source: a.source}
	if err := w.Check(); err != nil {
		return nil, &ModelError{Msg: err.Error(), Err: err}
	}
	return w, nil
}
