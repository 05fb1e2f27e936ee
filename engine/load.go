package engine

import (
	"fmt"
	"os"
	"path/filepath"

	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/tokenizer"
)

// LoadOptions configure Load.
type LoadOptions struct {
	Options
	// Tokenizer overrides where the tokenizer comes from: a tokenizer.json,
	// a folder holding one, a GGUF file, or a llama2.c tokenizer.bin.
	Tokenizer string
}

// LoadWeights reads a model's weights and tokenizer from a GGUF file, a
// Hugging Face folder, a llama2.c checkpoint (its tokenizer from
// o.Tokenizer, or tokenizer.bin / tok<V>.bin beside it) or a converted folder.
func LoadWeights(path string, tokPath string) (*model.Weights, *tokenizer.Tokenizer, error) {
	f, err := model.DetectFormat(path)
	if err != nil {
		return nil, nil, err
	}
	var w *model.Weights
	var tok *tokenizer.Tokenizer
	switch f {
	case model.FormatGGUF:
		g, err := loader.ReadGGUF(path)
		if err != nil {
			return nil, nil, err
		}
		if w, err = model.FromGGUF(g); err != nil {
			return nil, nil, err
		}
		if tokPath == "" {
			if tok, err = tokenizer.FromGGUF(g); err != nil {
				return nil, nil, fmt.Errorf("%s: tokenizer: %w", path, err)
			}
		}
	case model.FormatHF:
		if w, err = model.FromHF(path); err != nil {
			return nil, nil, err
		}
		if tokPath == "" {
			tokPath = path
		}
	case model.FormatLlama2C:
		if w, err = model.Load(path); err != nil {
			return nil, nil, err
		}
		if tokPath == "" {
			dir := filepath.Dir(path)
			for _, name := range []string{"tokenizer.bin", fmt.Sprintf("tok%d.bin", w.Config.Vocab)} {
				if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
					tokPath = filepath.Join(dir, name)
					break
				}
			}
		}
	default:
		if w, err = model.Load(path); err != nil {
			return nil, nil, err
		}
	}
	if tok == nil && tokPath != "" {
		if tok, err = LoadTokenizer(tokPath, w.Config.Vocab); err != nil {
			return nil, nil, err
		}
	}
	if tok != nil && tok.VocabSize() > w.Config.Vocab {
		return nil, nil, fmt.Errorf("%s: tokenizer has %d tokens, the model %d", path, tok.VocabSize(), w.Config.Vocab)
	}
	return w, tok, nil
}

// LoadTokenizer reads a tokenizer.json (or its folder), a GGUF file's
// vocabulary, or a llama2.c tokenizer.bin of vocab tokens.
func LoadTokenizer(path string, vocab int) (*tokenizer.Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() || filepath.Ext(path) == ".json" {
		return tokenizer.FromHFDir(path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) >= 4 && string(data[:4]) == "GGUF" {
		g, err := loader.ParseGGUF(path, data)
		if err != nil {
			return nil, err
		}
		return tokenizer.FromGGUF(g)
	}
	tok, err := tokenizer.FromLlama2C(data, vocab)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tok, nil
}

// Load reads a model and builds an Engine on backend b.
func Load(path string, b model.Backend, o LoadOptions) (*Engine, error) {
	w, tok, err := LoadWeights(path, o.Tokenizer)
	if err != nil {
		return nil, err
	}
	m, err := model.Build(b, w)
	if err != nil {
		return nil, err
	}
	return New(m, tok, o.Options)
}
