package convert

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/source"
)

// Options are one conversion's settings.
type Options struct {
	In, Out    string   // the input's path (or name) and the output folder
	Quant      string   // "keep" (DefaultQuant), "q4", "q8" or "f16"
	Tokenizer  string   // tokenizer override
	Name       string   // model name in the manifest; the folder name when empty
	Extra      []string // files copied into the folder under their base names
	ShardBytes int64
	Workers    int // goroutines per tensor; GOMAXPROCS when 0
	// Progress, when set, is called with the source bytes of each piece
	// of a tensor converted and the total over the model.
	Progress func(n, total int64)
	Writing  func() // called before the first file is created, if set
	// Store, when set, receives the folder's files instead of Out (the
	// browser's Cache Storage); Name is then required.
	Store manifest.Store
}

// Convert writes o.In as a model folder at o.Out. Nothing is left at o.Out
// (or beside it) unless it succeeds.
func Convert(ctx context.Context, o Options) (*Report, error) {
	if err := CheckQuant(o.Quant); err != nil {
		return nil, err
	}
	src, err := Open(o.In, o.Tokenizer)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return FromSource(ctx, o, src)
}

// FromSource writes src as a model folder at o.Out, loading one tensor
// at a time and letting it go once written.
func FromSource(ctx context.Context, o Options, src *Input) (*Report, error) {
	w := src.Weights
	c := &w.Config
	tok := src.Tokenizer
	names, err := orderedNames(w)
	if err != nil {
		return nil, err
	}
	plans := make([]plan, len(names))
	var total int64
	for i, name := range names {
		t := w.Tensors[name]
		if plans[i], err = planTensor(o.Quant, c, t, src.parts[name]); err != nil {
			return nil, &TensorError{File: o.In, Tensor: name, Element: -1, Err: err}
		}
		n, err := t.Size()
		if err != nil {
			return nil, &TensorError{File: o.In, Tensor: name, Element: -1, Err: err}
		}
		total += int64(n)
	}
	specJSON, err := json.Marshal(tok.Spec)
	if err != nil {
		return nil, err
	}
	files := slices.Clip(tok.Files)
	for _, path := range o.Extra {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		files = append(files, source.File{Name: filepath.Base(path), Data: data})
	}

	if o.Writing != nil {
		o.Writing()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var wr *manifest.Writer
	if o.Store != nil {
		wr, err = manifest.NewStoreWriter(o.Name, o.ShardBytes, o.Store)
	} else {
		wr, err = manifest.NewWriter(o.Out, o.ShardBytes)
	}
	if err != nil {
		return nil, err
	}
	defer wr.Abort()
	r := &Report{Input: o.In, Output: o.Out, Quant: o.Quant}
	for _, f := range files {
		if err := wr.AddFile(f.Name, f.Data); err != nil {
			return nil, err
		}
		r.Files = append(r.Files, f.Name)
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	for i, name := range names {
		progress := func(n int64) {
			if o.Progress != nil {
				o.Progress(n, total)
			}
		}
		out, err := convertOne(ctx, o.In, w.Tensors[name], plans[i], workers, progress, r)
		if err != nil {
			return nil, err
		}
		if err := wr.Add(out); err != nil {
			return nil, err
		}
		delete(w.Tensors, name) // let the source's memory go
	}
	m := &manifest.Manifest{Name: o.Name, Arch: c.Arch, Quant: o.Quant, Config: *c,
		Tokenizer: specJSON, ChatTemplate: tok.Tok.ChatTemplate()}
	if err := wr.Close(m); err != nil {
		return nil, err
	}
	r.Shards = len(m.Shards)
	return r, nil
}

// convertOne loads and encodes t as p plans, adding its figures to r: a
// stacked plan block by block (the result stacked again), a Mixed tensor
// planned whole widened first.
func convertOne(ctx context.Context, file string, t *loader.Tensor, p plan, workers int, progress func(int64), r *Report) (*loader.Tensor, error) {
	if p.dst == loader.Mixed {
		blocks := make([]*loader.Tensor, len(t.Stack))
		for k, b := range t.Stack {
			b = &loader.Tensor{Name: model.StackPartName(t.Name, k), DType: b.DType, Shape: b.Shape, Data: b.Data, Load: b.Load}
			out, err := convertOne(ctx, file, b, p.stack[k], workers, progress, r)
			if err != nil {
				return nil, err
			}
			blocks[k] = out
		}
		return loader.Stacked(t.Name, blocks)
	}
	if t.DType == loader.Mixed {
		wide, err := t.Widened()
		if err != nil {
			return nil, &TensorError{File: file, Tensor: t.Name, Element: -1, Err: err}
		}
		t = wide
	}
	t, err := load(file, t)
	if err != nil {
		return nil, err
	}
	out, st, err := encodeTensor(ctx, file, t, p, workers, progress)
	if err != nil {
		return nil, err
	}
	st.InBytes, st.OutBytes = int64(len(t.Data)), int64(len(out.Data))
	r.add(st)
	return out, nil
}

// load returns t with its data read, if it is lazy.
func load(file string, t *loader.Tensor) (*loader.Tensor, error) {
	if !t.Lazy() {
		return t, nil
	}
	data, err := t.Bytes()
	if err != nil {
		return nil, &TensorError{File: file, Tensor: t.Name, Element: -1, Err: err}
	}
	return &loader.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: data}, nil
}

// orderedNames lists w's tensors in forward-pass order, and fails on any
// name that is not canonical.
func orderedNames(w *model.Weights) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	for _, n := range w.Config.TensorNames() {
		if _, ok := w.Tensors[n]; ok {
			names = append(names, n)
			seen[n] = true
		}
	}
	for _, n := range w.Names() {
		if !seen[n] {
			return nil, &loader.FormatError{File: w.Source, Field: "tensor " + n, Offset: -1,
				Err: fmt.Errorf("%w: not a canonical tensor of this %s model", loader.ErrUnsupported, w.Config.Arch)}
		}
	}
	return names, nil
}

// Layout is the manifest a conversion of src with quant would write, as
// far as it is known before any tensor is read: the config, every
// tensor's type, shape and bytes, and the bytes in shards of
// manifest.DefaultShardBytes (no hashes, offsets or parts). The browser
// checks it against the device before it converts a GGUF.
func Layout(src *Input, quant string) (*manifest.Manifest, error) {
	if err := CheckQuant(quant); err != nil {
		return nil, err
	}
	w := src.Weights
	names, err := orderedNames(w)
	if err != nil {
		return nil, err
	}
	m := &manifest.Manifest{Arch: w.Config.Arch, Quant: quant, Config: w.Config}
	var total int64
	for _, name := range names {
		t := w.Tensors[name]
		p, err := planTensor(quant, &w.Config, t, src.parts[name])
		if err != nil {
			return nil, &TensorError{File: src.Path, Tensor: name, Element: -1, Err: err}
		}
		n, err := p.dstSize(t)
		if err != nil {
			return nil, &TensorError{File: src.Path, Tensor: name, Element: -1, Err: err}
		}
		info := manifest.TensorInfo{Name: name, DType: p.dst.String(), Shape: append([]int(nil), t.Shape...), Bytes: int64(n)}
		for k, b := range t.Stack {
			if p.dst != loader.Mixed {
				break
			}
			bn, _ := p.stack[k].dstSize(b)
			info.Stack = append(info.Stack, model.StackPartName(name, k))
			m.Tensors = append(m.Tensors, manifest.TensorInfo{Name: info.Stack[k], DType: p.stack[k].dst.String(), Shape: append([]int(nil), b.Shape...), Bytes: int64(bn)})
		}
		m.Tensors = append(m.Tensors, info)
		total += int64(n)
	}
	for total > 0 {
		n := min(total, manifest.DefaultShardBytes)
		m.Shards = append(m.Shards, manifest.Shard{Bytes: n})
		total -= n
	}
	return m, nil
}
