package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/schollz/progressbar/v3"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/source"
)

// options are one conversion's settings.
type options struct {
	in, out    string
	quant      string   // quantKeep, quantQ4, quantQ8 or quantF16
	tokenizer  string   // tokenizer override
	name       string   // model name in the manifest; the folder name when empty
	extra      []string // files copied into the folder under their base names
	shardBytes int64
	workers    int       // goroutines per tensor; GOMAXPROCS when 0
	progress   io.Writer // where the progress bar goes; none when nil
	writing    func()    // called before the first file is created, if set
}

// convert writes o.in as a model folder at o.out. Nothing is left at o.out
// (or beside it) unless it succeeds.
func convert(ctx context.Context, o options) (*report, error) {
	if err := checkQuant(o.quant); err != nil {
		return nil, err
	}
	src, err := openInput(o.in, o.tokenizer)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return convertSource(ctx, o, src)
}

// convertSource writes src as a model folder at o.out, loading one tensor
// at a time and letting it go once written.
func convertSource(ctx context.Context, o options, src *input) (*report, error) {
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
		if plans[i], err = planTensor(o.quant, c, t, src.parts[name]); err != nil {
			return nil, &TensorError{File: o.in, Tensor: name, Element: -1, Err: err}
		}
		n, err := t.Size()
		if err != nil {
			return nil, &TensorError{File: o.in, Tensor: name, Element: -1, Err: err}
		}
		total += int64(n)
	}
	specJSON, err := json.Marshal(tok.Spec)
	if err != nil {
		return nil, err
	}
	files := slices.Clip(tok.Files)
	for _, path := range o.extra {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		files = append(files, source.File{Name: filepath.Base(path), Data: data})
	}

	if o.writing != nil {
		o.writing()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wr, err := manifest.NewWriter(o.out, o.shardBytes)
	if err != nil {
		return nil, err
	}
	defer wr.Abort()
	r := &report{Input: o.in, Output: o.out, Quant: o.quant}
	for _, f := range files {
		if err := wr.AddFile(f.Name, f.Data); err != nil {
			return nil, err
		}
		r.Files = append(r.Files, f.Name)
	}
	bar := newBar(o.progress, total, filepath.Base(o.out))
	workers := o.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	for i, name := range names {
		t, err := load(o.in, w.Tensors[name])
		if err != nil {
			return nil, err
		}
		out, st, err := encodeTensor(ctx, o.in, t, plans[i], workers, func(n int64) {
			if bar != nil {
				bar.Add64(n)
			}
		})
		if err != nil {
			return nil, err
		}
		if err := wr.Add(out); err != nil {
			return nil, err
		}
		st.InBytes, st.OutBytes = int64(len(t.Data)), int64(len(out.Data))
		r.add(st)
		delete(w.Tensors, name) // let the source's memory go
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(o.progress)
	}
	m := &manifest.Manifest{Name: o.name, Arch: c.Arch, Quant: o.quant, Config: *c,
		Tokenizer: specJSON, ChatTemplate: tok.Tok.ChatTemplate()}
	if err := wr.Close(m); err != nil {
		return nil, err
	}
	r.Shards = len(m.Shards)
	return r, nil
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

func newBar(w io.Writer, total int64, desc string) *progressbar.ProgressBar {
	if w == nil {
		return nil
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("converting "+desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
	)
}
