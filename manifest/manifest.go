package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"wasmllm/loader"
	"wasmllm/model"
)

// FormatVersion is the manifest format this package writes when no tensor
// spans shards; one that does (TensorInfo.Parts) is written as
// FormatVersionParts, so that a build that predates parts refuses it
// rather than read a tensor's first part as the whole. Both are read.
// A folder with a stacked tensor (TensorInfo.Stack) is FormatVersionStack.
const (
	FormatVersion      = 1
	FormatVersionParts = 2
	FormatVersionStack = 3
)

// Limits that keep a corrupt manifest from asking for absurd work.
const (
	// MaxManifestBytes caps manifest.json (a GGUF vocabulary inlined in
	// Tokenizer is a few MiB).
	MaxManifestBytes = 64 << 20
	// MaxDims caps a tensor's rank.
	MaxDims = 8
	// MaxElements caps a tensor's element count.
	MaxElements = 1 << 40
	// MaxShardBytes caps one shard's size.
	MaxShardBytes = 1 << 40
)

// Align is the byte alignment of every tensor inside its shard, so that a
// browser can bind or copy a tensor straight from a shard buffer.
const Align = 256

// ErrChecksum is wrapped by the error for a shard or tokenizer file whose
// sha256 does not match the manifest (it is loader.ErrChecksum).
var ErrChecksum = loader.ErrChecksum

// Manifest describes a converted model folder.
type Manifest struct {
	FormatVersion int    `json:"format_version"`
	Name          string `json:"name"`
	Arch          string `json:"arch"`
	// Quant is the converter's weight format choice ("keep", "q4", "q8",
	// "f16"), informational.
	Quant  string       `json:"quant,omitempty"`
	Config model.Config `json:"config"`
	// Tokenizer is a JSON object naming the tokenizer files in the folder,
	// as model.TokenizerSpec defines it: {"format":"hf","files":[...]},
	// {"format":"gguf","file":"tokenizer.gguf"} or
	// {"format":"llama2c","file":"tokenizer.bin"}. This package only
	// requires an object (or nothing).
	Tokenizer    json.RawMessage `json:"tokenizer,omitempty"`
	ChatTemplate string          `json:"chat_template,omitempty"`
	Shards       []Shard         `json:"shards"`
	Tensors      []TensorInfo    `json:"tensors"`
}

// Shard is one shard file of the model folder.
type Shard struct {
	File   string `json:"file"`   // content-hashed name, see IsHashedName
	Bytes  int64  `json:"bytes"`  // file size
	SHA256 string `json:"sha256"` // lowercase hex
}

// TensorInfo is one entry of the tensor table.
type TensorInfo struct {
	Name   string `json:"name"`
	DType  string `json:"dtype"` // loader.DType.String(), such as "F32", "F16", "q4", "q8"
	Shape  []int  `json:"shape"` // row-major, outermost first
	Shard  int    `json:"shard"` // index into Manifest.Shards
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
	// Parts, for a tensor larger than a shard, lists its bytes in order,
	// one stretch per shard, over consecutive shards; Shard and Offset are
	// then the first part's and Bytes the sum. Empty for a tensor within
	// one shard.
	Parts []Part `json:"parts,omitempty"`
	// Stack, for a tensor of DType "mixed" (loader.Mixed: a merged
	// projection whose parts have different block types), names its row
	// blocks in order: each an entry of its own type in the table
	// (model.StackPartName), (N_i, K) with ΣN_i the tensor's rows. Such an
	// entry has no bytes of its own (Pieces is empty); Bytes is the
	// blocks' sum.
	Stack []string `json:"stack,omitempty"`
}

// Part is one stretch of a tensor's bytes within one shard.
type Part struct {
	Shard  int   `json:"shard"`
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

// Pieces returns where t's bytes lie, in order: its Parts, or the one
// stretch Shard, Offset, Bytes; none for a stacked tensor.
func (t *TensorInfo) Pieces() []Part {
	if len(t.Stack) > 0 {
		return nil
	}
	if len(t.Parts) > 0 {
		return t.Parts
	}
	return []Part{{Shard: t.Shard, Offset: t.Offset, Bytes: t.Bytes}}
}

// Type returns the tensor's dtype; ok is false for a name loader does not
// know (Validate rejects those).
func (t *TensorInfo) Type() (d loader.DType, ok bool) {
	return parseDType(t.DType)
}

// parseDType maps an exact loader.DType.String() name to its DType.
func parseDType(s string) (loader.DType, bool) {
	d, ok := loader.ParseDType(s)
	if !ok || d.String() != s {
		return 0, false
	}
	return d, true
}

// TotalBytes is the sum of the shard sizes: what a full download costs.
func (m *Manifest) TotalBytes() int64 {
	var n int64
	for _, s := range m.Shards {
		n += s.Bytes
	}
	return n
}

// Lookup returns the table entry of the named tensor.
func (m *Manifest) Lookup(name string) (*TensorInfo, bool) {
	for i := range m.Tensors {
		if m.Tensors[i].Name == name {
			return &m.Tensors[i], true
		}
	}
	return nil, false
}

// Parse decodes and validates manifest JSON, as fetched by a browser before
// any shard. Errors are *loader.FormatError naming "manifest.json".
func Parse(data []byte) (*Manifest, error) {
	return parse(data, ManifestFile)
}

// Read reads and validates dir/manifest.json.
func Read(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decode(f, path)
}

// ReadFS reads and validates manifest.json at the root of fsys.
func ReadFS(fsys fs.FS) (*Manifest, error) {
	f, err := fsys.Open(ManifestFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decode(f, ManifestFile)
}

func decode(r io.Reader, file string) (*Manifest, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxManifestBytes+1))
	if err != nil {
		return nil, &loader.FormatError{File: file, Field: "read", Offset: -1, Err: err}
	}
	return parse(data, file)
}

func parse(data []byte, file string) (*Manifest, error) {
	if len(data) > MaxManifestBytes {
		return nil, &loader.FormatError{File: file, Field: "size", Offset: MaxManifestBytes,
			Err: fmt.Errorf("%w: manifest larger than %d bytes", loader.ErrTooLarge, MaxManifestBytes)}
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, jsonError(file, err)
	}
	if err := m.validate(file); err != nil {
		return nil, err
	}
	return &m, nil
}

// jsonError turns a decoding error into a FormatError carrying the byte
// offset where the decoder stopped.
func jsonError(file string, err error) error {
	fe := &loader.FormatError{File: file, Field: "json", Offset: -1, Err: fmt.Errorf("%w: %v", loader.ErrCorrupt, err)}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		fe.Offset = se.Offset
	case errors.As(err, &te):
		fe.Offset = te.Offset
		if te.Field != "" {
			fe.Field = te.Field
		}
	}
	return fe
}
