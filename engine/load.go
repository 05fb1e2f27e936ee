package engine

import (
	"wasmllm/model"
	"wasmllm/source"
)

// LoadOptions configure Load.
type LoadOptions struct {
	Options
	// Tokenizer overrides where the tokenizer comes from: a tokenizer.json,
	// a folder holding one, a GGUF file, or a llama2.c tokenizer.bin.
	Tokenizer string
	// MTP loads the model's NextN/MTP block, which speculative requests
	// draft with (source.Options.MTP).
	MTP bool
}

// Load reads a model (a GGUF file, a Hugging Face folder, a llama2.c
// checkpoint or a converted folder: source.Open) and builds an Engine on
// backend b.
func Load(path string, b model.Backend, o LoadOptions) (*Engine, error) {
	s, err := source.Open(path, source.Options{Tokenizer: o.Tokenizer, MTP: o.MTP})
	if err != nil {
		return nil, err
	}
	m, err := model.Build(b, s.Weights)
	if err != nil {
		return nil, err
	}
	return New(m, s.Tok(), o.Options)
}
