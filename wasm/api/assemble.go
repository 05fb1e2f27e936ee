package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/tokenizer"
)

// Assembler collects a converted model's tensors shard by shard, as the
// browser loader verifies each shard.
type Assembler struct {
	m       *manifest.Manifest
	source  string
	tensors map[string]*loader.Tensor
	done    []bool
	byShard [][]int // tensor indices per shard
}

// NewAssembler starts assembling m; source names the model in messages.
func NewAssembler(m *manifest.Manifest, source string) *Assembler {
	a := &Assembler{m: m, source: source, tensors: make(map[string]*loader.Tensor, len(m.Tensors)),
		done: make([]bool, len(m.Shards)), byShard: make([][]int, len(m.Shards))}
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
	w := &model.Weights{Config: a.m.Config, Tensors: a.tensors, Source: a.source}
	if err := w.Check(); err != nil {
		return nil, &Error{Code: CodeBadModel, Message: err.Error(), Err: err}
	}
	return w, nil
}

// tokenizerSpec is manifest.Tokenizer's common part.
type tokenizerSpec struct {
	Kind       string `json:"kind"`
	File       string `json:"file"`
	ConfigFile string `json:"config_file"`
}

// TokenizerFiles lists the files of the model folder the tokenizer is read
// from (none when it is inline in the manifest, or absent).
func TokenizerFiles(m *manifest.Manifest) ([]string, error) {
	spec, err := parseSpec(m)
	if err != nil || spec == nil {
		return nil, err
	}
	var files []string
	switch spec.Kind {
	case "hf":
		files = append(files, orDefault(spec.File, "tokenizer.json"))
		if spec.ConfigFile != "" {
			files = append(files, spec.ConfigFile)
		}
	case "llama2c":
		if spec.File == "" {
			return nil, badTokenizer("file", "missing")
		}
		files = append(files, spec.File)
	}
	for _, f := range files {
		if f != path.Base(f) || strings.HasPrefix(f, ".") || f == manifest.ManifestFile {
			return nil, badTokenizer("file", fmt.Sprintf("%q is not a plain file name of the model folder", f))
		}
	}
	return files, nil
}

// BuildTokenizer builds the tokenizer m names, with files holding the
// contents of TokenizerFiles(m). A manifest without a tokenizer gives nil.
func BuildTokenizer(m *manifest.Manifest, files map[string][]byte) (*tokenizer.Tokenizer, error) {
	spec, err := parseSpec(m)
	if err != nil || spec == nil {
		return nil, err
	}
	names, err := TokenizerFiles(m)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := files[n]; !ok {
			return nil, Errorf(CodeInternal, "tokenizer file %s was not fetched", n)
		}
	}
	var tok *tokenizer.Tokenizer
	switch spec.Kind {
	case "hf":
		var cfg []byte
		if spec.ConfigFile != "" {
			cfg = files[spec.ConfigFile]
		}
		tok, err = tokenizer.FromHFJSON(files[names[0]], cfg)
	case "llama2c":
		tok, err = tokenizer.FromLlama2C(files[spec.File], m.Config.Vocab)
	case "gguf":
		tok, err = ggufTokenizer(m)
	default:
		return nil, badTokenizer("kind", fmt.Sprintf("%q is not hf, gguf or llama2c", spec.Kind))
	}
	if err != nil {
		return nil, &Error{Code: CodeBadModel, Message: "tokenizer: " + err.Error(), Err: err}
	}
	if tok.VocabSize() > m.Config.Vocab {
		return nil, badTokenizer("", fmt.Sprintf("%d tokens, the model has %d", tok.VocabSize(), m.Config.Vocab))
	}
	return tok, nil
}

func parseSpec(m *manifest.Manifest) (*tokenizerSpec, error) {
	raw := bytes.TrimSpace(m.Tokenizer)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s tokenizerSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, badTokenizer("", err.Error())
	}
	return &s, nil
}

// ggufTokenizer builds a tokenizer from GGUF vocabulary fields inlined in
// the manifest: {"kind":"gguf","model":"llama","tokens":[...],...}, keys
// named as GGUF's tokenizer.ggml.* (with or without that prefix), and
// chat_template from the manifest when the object has none.
func ggufTokenizer(m *manifest.Manifest) (*tokenizer.Tokenizer, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(m.Tokenizer, &fields); err != nil {
		return nil, err
	}
	g := &loader.GGUF{File: "manifest.json tokenizer", Meta: map[string]any{}}
	for k, v := range fields {
		if k == "kind" {
			continue
		}
		key := k
		switch {
		case k == "chat_template":
			key = "tokenizer.chat_template"
		case !strings.HasPrefix(k, "tokenizer."):
			key = "tokenizer.ggml." + k
		}
		val, err := ggufValue(strings.TrimPrefix(key, "tokenizer.ggml."), v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", k, err)
		}
		g.Keys = append(g.Keys, key)
		g.Meta[key] = val
	}
	if _, ok := g.Meta["tokenizer.chat_template"]; !ok && m.ChatTemplate != "" {
		g.Keys = append(g.Keys, "tokenizer.chat_template")
		g.Meta["tokenizer.chat_template"] = m.ChatTemplate
	}
	return tokenizer.FromGGUF(g)
}

// ggufValue decodes a field into the Go type GGUF metadata would have.
func ggufValue(name string, v json.RawMessage) (any, error) {
	switch name {
	case "tokens", "merges":
		var s []string
		err := json.Unmarshal(v, &s)
		return s, err
	case "token_type":
		var s []int32
		err := json.Unmarshal(v, &s)
		return s, err
	case "scores":
		var s []float32
		err := json.Unmarshal(v, &s)
		return s, err
	}
	t := bytes.TrimSpace(v)
	switch {
	case len(t) > 0 && t[0] == '"':
		var s string
		err := json.Unmarshal(v, &s)
		return s, err
	case string(t) == "true" || string(t) == "false":
		return string(t) == "true", nil
	case strings.HasSuffix(name, "_id"):
		var n int64
		err := json.Unmarshal(v, &n)
		return n, err
	}
	var x any
	err := json.Unmarshal(v, &x)
	return x, err
}

func badTokenizer(field, what string) *Error {
	msg := "manifest.json: tokenizer"
	if field != "" {
		msg += "." + field
	}
	return &Error{Code: CodeBadModel, Message: msg + ": " + what}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
