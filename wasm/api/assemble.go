package api

import (
	"encoding/json"
	"fmt"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/tokenizer"
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
// planar q8 and q4), except rope_freqs, which the model reads on the host.
func ResidentOnGPU(ti *manifest.TensorInfo) bool {
	d, _ := ti.Type()
	switch d {
	case loader.F32, loader.F16, loader.Q8, loader.Q4:
		return ti.Name != model.NameRopeFreqs
	}
	return false
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
		return Errorf(CodeInternal, "loader: shard index %d of %d", i, len(a.m.Shards))
	}
	s := &a.m.Shards[i]
	if n != s.Bytes {
		return &Error{Code: CodeIntegrity, Message: fmt.Sprintf("shard %s: %d bytes, the manifest says %d", s.File, n, s.Bytes),
			Details: map[string]any{"shard": s.File}}
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
			return nil, Errorf(CodeInternal, "loader: shard %s was never delivered", a.m.Shards[i].File)
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
		return nil, &Error{Code: CodeBadModel, Message: err.Error(), Err: err}
	}
	return w, nil
}

// TokenizerFiles returns the files of the model folder the tokenizer is
// read from, with their sha256 (model.TokenizerSpec); nil when the manifest
// names no tokenizer.
func TokenizerFiles(m *manifest.Manifest) (*model.TokenizerSpec, error) {
	spec, err := model.ParseTokenizerSpec(manifest.ManifestFile, m.Tokenizer)
	if err != nil {
		return nil, &Error{Code: CodeBadModel, Message: err.Error(), Err: err}
	}
	return spec, nil
}

// BuildTokenizer builds the tokenizer m names, with files holding the
// contents of TokenizerFiles(m). A manifest without a tokenizer gives nil.
//
// A Hugging Face tokenizer is read from tokenizer.json and
// tokenizer_config.json, with chat_template.jinja as the template when the
// config has none; generation_config.json's extra EOS ids are not read
// (tokenizer.FromHFDir reads them, but only from a folder on disk).
func BuildTokenizer(m *manifest.Manifest, files map[string][]byte) (*tokenizer.Tokenizer, error) {
	spec, err := model.ParseTokenizerSpec(manifest.ManifestFile, m.Tokenizer)
	if err != nil {
		return nil, &Error{Code: CodeBadModel, Message: err.Error(), Err: err}
	}
	if spec == nil {
		return nil, nil
	}
	for _, n := range spec.Names() {
		data, ok := files[n]
		if !ok {
			return nil, Errorf(CodeInternal, "tokenizer file %s was not fetched", n)
		}
		if err := spec.Verify(n, n, data); err != nil {
			return nil, err
		}
	}
	var tok *tokenizer.Tokenizer
	switch spec.Format {
	case model.TokenizerHF:
		var cfg []byte
		if cfg, err = hfConfig(files); err == nil {
			tok, err = tokenizer.FromHFJSON(files["tokenizer.json"], cfg)
		}
	case model.TokenizerGGUF:
		var g *loader.GGUF
		if g, err = loader.ParseGGUF(spec.File, files[spec.File]); err == nil {
			tok, err = tokenizer.FromGGUF(g)
		}
	default:
		tok, err = tokenizer.FromLlama2C(files[spec.File], m.Config.Vocab)
	}
	if err != nil {
		return nil, &Error{Code: CodeBadModel, Message: "tokenizer: " + err.Error(), Err: err}
	}
	if tok.VocabSize() > m.Config.Vocab {
		return nil, Errorf(CodeBadModel, "tokenizer: %d tokens, the model has %d", tok.VocabSize(), m.Config.Vocab)
	}
	return tok, nil
}

// hfConfig returns tokenizer_config.json (or nil), with the contents of
// chat_template.jinja as its chat_template when it has none.
func hfConfig(files map[string][]byte) ([]byte, error) {
	cfg := files["tokenizer_config.json"]
	tmpl, ok := files["chat_template.jinja"]
	if !ok {
		return cfg, nil
	}
	obj := map[string]json.RawMessage{}
	if cfg != nil {
		if err := json.Unmarshal(cfg, &obj); err != nil {
			return nil, &loader.FormatError{File: "tokenizer_config.json", Field: "JSON", Offset: -1, Err: err}
		}
	}
	if t, has := obj["chat_template"]; has && !isNull(t) {
		return cfg, nil
	}
	obj["chat_template"], _ = json.Marshal(string(tmpl))
	return json.Marshal(obj)
}
