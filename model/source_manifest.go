package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"wasmllm/loader"
)

// TensorReader reads named tensors, such as a manifest.Reader.
type TensorReader interface {
	Tensor(name string) (*loader.Tensor, error)
}

// FromCanonical builds weights from tensors stored under their canonical
// names and already merged (a converted folder). Every name must be one of
// c.TensorNames() or a row block of one (StackPartName, read with its
// stacked tensor); the result is checked with Check.
func FromCanonical(source string, c Config, names []string, r TensorReader) (*Weights, error) {
	known := map[string]bool{}
	for _, n := range c.TensorNames() {
		known[n] = true
	}
	w := &Weights{Config: c, Tensors: make(map[string]*loader.Tensor, len(names)), Source: source}
	for _, name := range names {
		if IsStackPart(name) {
			continue // a row block, read with its stacked tensor
		}
		if !known[name] {
			return nil, &loader.FormatError{File: source, Field: "tensor " + name, Offset: -1,
				Err: fmt.Errorf("%w: not a canonical tensor of this %s model", loader.ErrUnsupported, c.Arch)}
		}
		t, err := r.Tensor(name)
		if err != nil {
			return nil, err
		}
		t.Name = name
		w.Tensors[name] = t
	}
	if err := w.Check(); err != nil {
		return nil, err
	}
	return w, nil
}

// Tokenizer formats of a converted folder (TokenizerSpec.Format).
const (
	TokenizerHF      = "hf"      // tokenizer.json and friends in the folder
	TokenizerGGUF    = "gguf"    // a metadata-only GGUF holding tokenizer.* keys
	TokenizerLlama2C = "llama2c" // a llama2.c tokenizer.bin
)

// TokenizerSpec is the "tokenizer" object of a converted folder's manifest:
//
//	{"format":"hf","files":["tokenizer.json","tokenizer_config.json"],"sha256":{"tokenizer.json":"...","tokenizer_config.json":"..."}}
//	{"format":"gguf","file":"tokenizer.gguf","sha256":{"tokenizer.gguf":"..."}}
//	{"format":"llama2c","file":"tokenizer.bin","sha256":{"tokenizer.bin":"..."}}
//
// File names are plain names inside the model folder. Every file has its
// sha256 (lowercase hex), checked before the file is used or cached, as a
// shard's is.
type TokenizerSpec struct {
	Format string            `json:"format"`
	File   string            `json:"file,omitempty"`  // gguf, llama2c
	Files  []string          `json:"files,omitempty"` // hf: tokenizer.json first
	SHA256 map[string]string `json:"sha256"`
}

// Names lists the spec's files.
func (s *TokenizerSpec) Names() []string {
	if s.Format == TokenizerHF {
		return s.Files
	}
	return []string{s.File}
}

// Verify checks data, the contents of the spec's file name (found at path,
// for the error), against its sha256. A mismatch is a *loader.FormatError
// wrapping loader.ErrChecksum.
func (s *TokenizerSpec) Verify(path, name string, data []byte) error {
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != s.SHA256[name] {
		return &loader.FormatError{File: path, Field: "sha256", Offset: -1,
			Err: fmt.Errorf("%w: tokenizer file %s has sha256 %s, the manifest says %s", loader.ErrChecksum, name, got, s.SHA256[name])}
	}
	return nil
}

// maxTokenizerFiles bounds TokenizerSpec.Files.
const maxTokenizerFiles = 16

// ParseTokenizerSpec decodes and checks a manifest's tokenizer object from
// file; it returns nil for an absent or null one.
func ParseTokenizerSpec(file string, raw json.RawMessage) (*TokenizerSpec, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return &loader.FormatError{File: file, Field: "tokenizer", Offset: -1, Err: fmt.Errorf("%w: "+format, append([]any{loader.ErrCorrupt}, args...)...)}
	}
	var s TokenizerSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, bad("%v", err)
	}
	if dec.More() {
		return nil, bad("trailing data after the object")
	}
	switch s.Format {
	case TokenizerHF:
		if s.File != "" {
			return nil, bad(`format "hf" lists "files", not "file"`)
		}
		if len(s.Files) == 0 || len(s.Files) > maxTokenizerFiles {
			return nil, bad("%d files", len(s.Files))
		}
		if s.Files[0] != "tokenizer.json" {
			return nil, bad("first file is %q, want tokenizer.json", s.Files[0])
		}
		seen := map[string]bool{}
		for _, f := range s.Files {
			if !plainFileName(f) || seen[f] {
				return nil, bad("file name %q", f)
			}
			seen[f] = true
		}
	case TokenizerGGUF, TokenizerLlama2C:
		if len(s.Files) != 0 || !plainFileName(s.File) {
			return nil, bad("format %q needs one plain file name in \"file\", got %q", s.Format, s.File)
		}
	default:
		return nil, &loader.FormatError{File: file, Field: "tokenizer.format", Offset: -1,
			Err: fmt.Errorf("%w: tokenizer format %q", loader.ErrUnsupported, s.Format)}
	}
	names := s.Names()
	for _, n := range names {
		if h := s.SHA256[n]; len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			return nil, &loader.FormatError{File: file, Field: "tokenizer.sha256", Offset: -1,
				Err: fmt.Errorf("%w: %q for %s is not a sha256 in lowercase hex (a folder converted before tokenizer files were hashed: convert it again)", loader.ErrCorrupt, h, n)}
		}
	}
	if len(s.SHA256) != len(names) {
		return nil, bad("sha256 lists %d files, the spec %d", len(s.SHA256), len(names))
	}
	return &s, nil
}

// plainFileName reports whether name is one path element that stays inside
// its folder on every OS: no separators, not "." or "..", not hidden.
func plainFileName(name string) bool {
	return name != "" && len(name) <= 255 && !strings.ContainsAny(name, `/\:`+"\x00") &&
		name[0] != '.' && filepath.IsLocal(name)
}
