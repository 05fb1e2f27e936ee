package engine

import (
	"fmt"
	"os"
	"path/filepath"

	"wasmllm/loader"
	"wasmllm/manifest"
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
	case model.FormatManifest:
		var m *manifest.Manifest
		if w, m, err = loadManifest(path); err != nil {
			return nil, nil, err
		}
		if tokPath == "" {
			if tok, err = manifestTokenizer(path, m, w.Config.Vocab); err != nil {
				return nil, nil, err
			}
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

func init() {
	model.RegisterLoader(model.FormatManifest, func(path string) (*model.Weights, error) {
		w, _, err := loadManifest(path)
		return w, err
	})
}

// loadManifest reads a converted folder, verifying every shard's sha256.
func loadManifest(dir string) (*model.Weights, *manifest.Manifest, error) {
	r, err := manifest.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	m := r.Manifest()
	names := make([]string, len(m.Tensors))
	for i := range m.Tensors {
		names[i] = m.Tensors[i].Name
	}
	w, err := model.FromCanonical(dir, m.Config, names, r)
	if err != nil {
		return nil, nil, err
	}
	return w, m, nil
}

// manifestTokenizer loads the tokenizer a converted folder's manifest
// describes (see model.TokenizerSpec); nil when it names none.
func manifestTokenizer(dir string, m *manifest.Manifest, vocab int) (*tokenizer.Tokenizer, error) {
	spec, err := model.ParseTokenizerSpec(filepath.Join(dir, manifest.ManifestFile), m.Tokenizer)
	if err != nil || spec == nil {
		return nil, err
	}
	for _, name := range spec.Names() {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := spec.Verify(path, name, data); err != nil {
			return nil, err
		}
	}
	switch spec.Format {
	case model.TokenizerHF:
		return tokenizer.FromHFDir(dir)
	case model.TokenizerGGUF:
		path := filepath.Join(dir, spec.File)
		g, err := loader.ReadGGUF(path)
		if err != nil {
			return nil, err
		}
		return tokenizer.FromGGUF(g)
	}
	path := filepath.Join(dir, spec.File)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromLlama2C(data, vocab)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tok, nil
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
