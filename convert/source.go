package convert

import (
	"fmt"

	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/source"
)

// Input is an opened input model: its source (canonical weights and
// tokenizer) plus what the converter needs besides them.
type Input struct {
	*source.Source
	// parts maps a canonical tensor to the GGUF types merged into it.
	parts map[string][]loader.DType
}

// Open opens path through package source: a GGUF file or a Hugging
// Face folder, whose tensors stay in their files until loaded (lazy), or a
// llama2.c checkpoint or a converted folder, read whole (the latter's
// planar tensors turned back into ggml blocks, losslessly). The tokenizer
// comes from tokPath when set, else from the source, which must have one.
func Open(path, tokPath string) (*Input, error) {
	s, err := source.Open(path, source.Options{Tokenizer: tokPath, Lazy: true})
	if err != nil {
		return nil, err
	}
	in, err := NewInput(s)
	if err != nil {
		s.Close()
		return nil, err
	}
	return in, nil
}

// NewInput prepares an opened source for conversion (one whose tensors
// come from elsewhere than a path: a GGUF read over the network).
func NewInput(s *source.Source) (*Input, error) {
	in := &Input{Source: s}
	if err := in.prepare(); err != nil {
		return nil, err
	}
	return in, nil
}

func (in *Input) prepare() error {
	switch in.Format {
	case source.FormatGGUF:
		in.parts = ggufParts(in.GGUF, &in.Weights.Config)
	case source.FormatManifest:
		for name, t := range in.Weights.Tensors {
			if t.DType != loader.Q4 && t.DType != loader.Q8 {
				continue
			}
			b, err := loader.FromPlanar(t)
			if err != nil {
				return &TensorError{File: in.Path, Tensor: name, Element: -1, Err: err}
			}
			in.Weights.Tensors[name] = b
		}
	}
	if in.Tokenizer == nil {
		return fmt.Errorf("%w; pass -tokenizer", in.NoTokenizer)
	}
	return nil
}

// ggufParts lists, for each merged canonical tensor, the types of the GGUF
// tensors it was made from.
func ggufParts(g *loader.GGUF, c *model.Config) map[string][]loader.DType {
	types := make(map[string]loader.DType, len(g.Tensors))
	for _, ti := range g.Tensors {
		types[ti.Name] = ti.DType
	}
	parts := map[string][]loader.DType{}
	for dst, srcs := range model.GGUFMerges(c) {
		var ts []loader.DType
		for _, s := range srcs {
			if d, ok := types[s]; ok {
				ts = append(ts, d)
			}
		}
		parts[dst] = ts
	}
	return parts
}
