package main

import (
	"fmt"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
)

// source is a loaded input model: canonical weights plus what the
// converter needs besides them.
type source struct {
	path   string
	format model.Format
	w      *model.Weights
	// parts maps a canonical tensor to the GGUF types merged into it.
	parts map[string][]loader.DType
	gguf  *loader.GGUF       // a GGUF input, for its tokenizer metadata
	man   *manifest.Manifest // a converted-folder input, for its tokenizer
	close func() error
}

// openSource opens path through package model: a GGUF file or a Hugging
// Face folder, whose tensors stay in their files until loaded (lazy), or a
// llama2.c checkpoint or a converted folder, read whole (the latter's planar
// tensors turned back into ggml blocks, losslessly).
func openSource(path string) (*source, error) {
	f, err := model.DetectFormat(path)
	if err != nil {
		return nil, err
	}
	s := &source{path: path, format: f, close: func() error { return nil }}
	switch f {
	case model.FormatGGUF:
		g, err := loader.OpenGGUF(path)
		if err != nil {
			return nil, err
		}
		s.gguf, s.close = g, g.Close
		if s.w, err = model.FromGGUFLazy(g); err != nil {
			g.Close()
			return nil, err
		}
		s.parts = ggufParts(g, &s.w.Config)
	case model.FormatHF:
		if s.w, s.close, err = model.FromHFLazy(path); err != nil {
			return nil, err
		}
	case model.FormatManifest:
		if s.man, err = manifest.Read(path); err != nil {
			return nil, err
		}
		if s.w, err = model.Load(path); err != nil {
			return nil, err
		}
		for name, t := range s.w.Tensors {
			if t.DType != loader.Q4 && t.DType != loader.Q8 {
				continue
			}
			b, err := loader.FromPlanar(t)
			if err != nil {
				return nil, &TensorError{File: path, Tensor: name, Element: -1, Err: err}
			}
			s.w.Tensors[name] = b
		}
	default:
		if s.w, err = model.Load(path); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ggufParts lists, for each merged canonical tensor, the types of the GGUF
// tensors it was made from.
func ggufParts(g *loader.GGUF, c *model.Config) map[string][]loader.DType {
	types := make(map[string]loader.DType, len(g.Tensors))
	for _, ti := range g.Tensors {
		types[ti.Name] = ti.DType
	}
	parts := map[string][]loader.DType{}
	merge := func(dst string, srcs ...string) {
		var ts []loader.DType
		for _, s := range srcs {
			if d, ok := types[s]; ok {
				ts = append(ts, d)
			}
		}
		parts[dst] = ts
	}
	for l := 0; l < c.Layers; l++ {
		f := func(s string) string { return fmt.Sprintf(s, l) }
		merge(f(model.NameQKV), f("blk.%d.attn_q.weight"), f("blk.%d.attn_k.weight"), f("blk.%d.attn_v.weight"))
		merge(f(model.NameGateUp), f("blk.%d.ffn_gate.weight"), f("blk.%d.ffn_up.weight"))
		merge(f(model.NameGateUpExps), f("blk.%d.ffn_gate_exps.weight"), f("blk.%d.ffn_up_exps.weight"))
	}
	return parts
}
