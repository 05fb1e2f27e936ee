package manifest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"wasmllm/loader"
	"wasmllm/model"
)

// Validate checks the manifest on its own, before any shard is fetched: the
// format version, the config, every shard entry (content-hashed name, size,
// sha256) and every tensor entry (known dtype, shape*dtype == bytes, shard
// index valid, offset aligned to Align, offset+bytes within the shard, no
// overlap). Errors are *loader.FormatError; a tensor entry that does not fit
// its shard names the shard file, the tensor and the offset.
func (m *Manifest) Validate() error { return m.validate(ManifestFile) }

func (m *Manifest) validate(file string) error {
	bad := func(field string, format string, args ...any) error {
		return &loader.FormatError{File: file, Field: field, Offset: -1, Err: fmt.Errorf("%w: "+format, append([]any{loader.ErrCorrupt}, args...)...)}
	}
	if m.FormatVersion < FormatVersion || m.FormatVersion > FormatVersionStack {
		return &loader.FormatError{File: file, Field: "format_version", Offset: -1,
			Err: fmt.Errorf("%w: format_version %d, this build reads %d to %d", loader.ErrUnsupported, m.FormatVersion, FormatVersion, FormatVersionStack)}
	}
	if m.Arch == "" {
		return bad("arch", "missing")
	}
	if m.Config.Arch != m.Arch {
		return bad("config.arch", "%q differs from arch %q", m.Config.Arch, m.Arch)
	}
	if err := m.Config.Validate(); err != nil {
		field := "config"
		var ce *model.ConfigError
		if errors.As(err, &ce) {
			field += "." + ce.Field
		}
		return &loader.FormatError{File: file, Field: field, Offset: -1, Err: fmt.Errorf("%w: %w", loader.ErrCorrupt, err)}
	}
	if tok := bytes.TrimSpace(m.Tokenizer); len(tok) > 0 && tok[0] != '{' && !bytes.Equal(tok, []byte("null")) {
		return bad("tokenizer", "not a JSON object")
	}
	if err := m.validateShards(file, bad); err != nil {
		return err
	}
	if err := m.validateTensors(file, bad); err != nil {
		return err
	}
	return m.validateStacks(bad)
}

func (m *Manifest) validateShards(file string, bad func(string, string, ...any) error) error {
	seen := make(map[string]int, len(m.Shards))
	for i, s := range m.Shards {
		field := fmt.Sprintf("shards[%d]", i)
		h, ok := NameHash(s.File)
		switch {
		case !ok:
			return bad(field+".file", "%q is not a content-hashed shard name (<name>-<16..64 hex>.bin)", s.File)
		case len(s.SHA256) != 64 || !isLowerHex(s.SHA256):
			return bad(field+".sha256", "%q is not 64 lowercase hex digits", s.SHA256)
		case s.SHA256[:len(h)] != h:
			return bad(field+".file", "name hash %s does not match sha256 %s", h, s.SHA256)
		case s.Bytes < 0 || s.Bytes > MaxShardBytes:
			return bad(field+".bytes", "%d out of range", s.Bytes)
		}
		if j, dup := seen[s.File]; dup {
			return bad(field+".file", "%q repeats shards[%d]", s.File, j)
		}
		seen[s.File] = i
	}
	return nil
}

type span struct {
	shard      int
	start, end int64
	tensor     int
}

// validateStacks checks every stacked tensor (TensorInfo.Stack): dtype
// "mixed", a 2-D shape, at least two row blocks, each another entry of one
// type with the tensor's columns, used by no other stack, whose rows and
// bytes sum to the tensor's.
func (m *Manifest) validateStacks(bad func(string, string, ...any) error) error {
	index := make(map[string]int, len(m.Tensors))
	for i := range m.Tensors {
		index[m.Tensors[i].Name] = i
	}
	used := map[string]bool{}
	for i := range m.Tensors {
		t := &m.Tensors[i]
		field := fmt.Sprintf("tensors[%d] %q", i, t.Name)
		d, _ := t.Type()
		if (d == loader.Mixed) != (len(t.Stack) > 0) {
			return bad(field+" stack", "dtype %s with %d row blocks: a stack is exactly a mixed tensor", t.DType, len(t.Stack))
		}
		if len(t.Stack) == 0 {
			continue
		}
		if m.FormatVersion < FormatVersionStack {
			return bad(field+" stack", "needs format_version %d", FormatVersionStack)
		}
		if len(t.Shape) != 2 || len(t.Stack) < 2 || len(t.Parts) > 0 {
			return bad(field+" stack", "shape %v with %d row blocks and %d parts: want a matrix of at least 2 blocks, no parts", t.Shape, len(t.Stack), len(t.Parts))
		}
		rows, bytes := 0, int64(0)
		for k, name := range t.Stack {
			j, ok := index[name]
			if !ok || used[name] || j == i {
				return bad(fmt.Sprintf("%s stack[%d]", field, k), "%q is not another entry of the table, or is in another stack", name)
			}
			used[name] = true
			p := &m.Tensors[j]
			if pd, _ := p.Type(); pd == loader.Mixed || len(p.Shape) != 2 || p.Shape[1] != t.Shape[1] {
				return bad(fmt.Sprintf("%s stack[%d]", field, k), "%q is %s %v, want (N, %d) of one type", name, p.DType, p.Shape, t.Shape[1])
			}
			rows += p.Shape[0]
			bytes += p.Bytes
		}
		if rows != t.Shape[0] || bytes != t.Bytes {
			return bad(field+" stack", "row blocks of %d rows and %d bytes, the tensor has %d and %d", rows, bytes, t.Shape[0], t.Bytes)
		}
	}
	return nil
}

func (m *Manifest) validateTensors(file string, bad func(string, string, ...any) error) error {
	seen := make(map[string]int, len(m.Tensors))
	spans := make([]span, 0, len(m.Tensors))
	for i := range m.Tensors {
		t := &m.Tensors[i]
		field := fmt.Sprintf("tensors[%d] %q", i, t.Name)
		if t.Name == "" {
			return bad(field+" name", "empty")
		}
		if j, dup := seen[t.Name]; dup {
			return bad(field+" name", "repeats tensors[%d]", j)
		}
		seen[t.Name] = i
		d, ok := t.Type()
		if !ok {
			return &loader.FormatError{File: file, Field: field + " dtype", Offset: -1, Err: fmt.Errorf("%w: dtype %q", loader.ErrUnsupported, t.DType)}
		}
		n, err := elements(t.Shape)
		if err != nil {
			return bad(field+" shape", "%v: %v", t.Shape, err)
		}
		if d == loader.Mixed || len(t.Stack) > 0 {
			continue // validateStacks
		}
		if cols, be := lastDim(t.Shape), d.BlockElems(); cols%be != 0 {
			return bad(field+" shape", "row of %d elements is not a whole number of %s blocks of %d", cols, t.DType, be)
		}
		size, err := d.Size(int(n))
		if err != nil {
			return &loader.FormatError{File: file, Field: field + " shape", Offset: -1, Err: err}
		}
		if int64(size) != t.Bytes {
			return bad(field+" bytes", "%d, but shape %v of %s needs %d", t.Bytes, t.Shape, t.DType, size)
		}
		if len(t.Parts) > 0 {
			if m.FormatVersion < FormatVersionParts {
				return bad(field+" parts", "needs format_version %d", FormatVersionParts)
			}
			p0 := t.Parts[0]
			if p0.Shard != t.Shard || p0.Offset != t.Offset {
				return bad(field+" parts[0]", "shard %d offset %d, but the tensor says shard %d offset %d", p0.Shard, p0.Offset, t.Shard, t.Offset)
			}
			var sum int64
			for k, p := range t.Parts {
				if k > 0 && p.Shard != t.Parts[k-1].Shard+1 {
					return bad(fmt.Sprintf("%s parts[%d].shard", field, k), "%d does not follow shard %d", p.Shard, t.Parts[k-1].Shard)
				}
				if p.Bytes <= 0 || p.Bytes%4 != 0 && k < len(t.Parts)-1 {
					return bad(fmt.Sprintf("%s parts[%d].bytes", field, k), "%d: a part before the last is a positive multiple of 4 bytes", p.Bytes)
				}
				sum += p.Bytes
			}
			if sum != t.Bytes {
				return bad(field+" parts", "%d bytes in all, the tensor has %d", sum, t.Bytes)
			}
		}
		for k, p := range t.Pieces() {
			if p.Shard < 0 || p.Shard >= len(m.Shards) {
				return bad(field+" shard", "index %d, manifest has %d shards", p.Shard, len(m.Shards))
			}
			s := m.Shards[p.Shard]
			where := fmt.Sprintf("tensor %q (%s tensors[%d])", t.Name, filepath.Base(file), i)
			if len(t.Parts) > 0 {
				where = fmt.Sprintf("tensor %q part %d (%s tensors[%d])", t.Name, k, filepath.Base(file), i)
			}
			at := &loader.FormatError{File: filepath.Join(filepath.Dir(file), s.File), Field: where, Offset: p.Offset}
			switch {
			case p.Offset < 0:
				at.Err = fmt.Errorf("%w: negative offset", loader.ErrCorrupt)
			case p.Offset%Align != 0:
				at.Err = fmt.Errorf("%w: offset not a multiple of %d", loader.ErrCorrupt, Align)
			case p.Offset > s.Bytes || p.Bytes > s.Bytes-p.Offset:
				at.Err = fmt.Errorf("%w: %d bytes at offset %d run past the shard's %d bytes", loader.ErrTruncated, p.Bytes, p.Offset, s.Bytes)
			}
			if at.Err != nil {
				return at
			}
			spans = append(spans, span{p.Shard, p.Offset, p.Offset + p.Bytes, i})
		}
	}
	slices.SortFunc(spans, func(a, b span) int {
		if c := cmp.Compare(a.shard, b.shard); c != 0 {
			return c
		}
		return cmp.Compare(a.start, b.start)
	})
	for k := 1; k < len(spans); k++ {
		p, q := spans[k-1], spans[k]
		if p.shard == q.shard && q.start < p.end {
			t := &m.Tensors[q.tensor]
			return &loader.FormatError{File: filepath.Join(filepath.Dir(file), m.Shards[q.shard].File),
				Field: fmt.Sprintf("tensor %q (%s tensors[%d])", t.Name, filepath.Base(file), q.tensor), Offset: q.start,
				Err: fmt.Errorf("%w: overlaps tensor %q", loader.ErrCorrupt, m.Tensors[p.tensor].Name)}
		}
	}
	return nil
}

// elements returns the product of shape, each dimension at least 1, at most
// MaxDims dimensions and MaxElements elements.
func elements(shape []int) (int64, error) {
	if len(shape) > MaxDims {
		return 0, fmt.Errorf("%d dimensions, at most %d", len(shape), MaxDims)
	}
	n := int64(1)
	for _, d := range shape {
		if d < 1 {
			return 0, fmt.Errorf("dimension %d", d)
		}
		if int64(d) > MaxElements/n {
			return 0, fmt.Errorf("more than %d elements", int64(MaxElements))
		}
		n *= int64(d)
	}
	return n, nil
}

// lastDim is the contiguous dimension, 1 for a scalar.
func lastDim(shape []int) int {
	if len(shape) == 0 {
		return 1
	}
	return shape[len(shape)-1]
}
