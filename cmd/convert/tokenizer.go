package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/tokenizer"
)

// Tokenizer file names in a converted folder.
const (
	ggufTokenizerFile    = "tokenizer.gguf"
	llama2cTokenizerFile = "tokenizer.bin"
)

// hfTokenizerFiles are the Hugging Face files copied into a converted
// folder when present; tokenizer.json is required.
var hfTokenizerFiles = []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja"}

type namedFile struct {
	name string
	data []byte
}

// tokenizerOut is the tokenizer a converted folder carries: its files, its
// manifest entry, and the parsed tokenizer (checked before anything is
// written).
type tokenizerOut struct {
	spec  model.TokenizerSpec
	files []namedFile
	tok   *tokenizer.Tokenizer
}

// sourceTokenizer finds the input's tokenizer: override when set (a
// tokenizer.json or its folder, a GGUF file, or a llama2.c tokenizer.bin),
// else the GGUF's own vocabulary, the Hugging Face folder's files, the
// tokenizer.bin or tok<V>.bin beside a llama2.c checkpoint, or a converted
// folder's tokenizer.
func sourceTokenizer(s *source, override string) (*tokenizerOut, error) {
	vocab := s.w.Config.Vocab
	var out *tokenizerOut
	var err error
	switch {
	case override != "":
		out, err = tokenizerFromPath(override, vocab)
	case s.format == model.FormatGGUF:
		out, err = ggufTokenizer(s.path, s.gguf.MetaKVs())
	case s.format == model.FormatHF:
		out, err = hfTokenizer(s.path)
	case s.format == model.FormatLlama2C:
		out, err = besideCheckpoint(s.path, vocab)
	case s.format == model.FormatManifest:
		out, err = manifestTokenizer(s, vocab)
	default:
		err = fmt.Errorf("%s: no tokenizer source for format %s; pass -tokenizer", s.path, s.format)
	}
	if err != nil {
		return nil, err
	}
	if n := out.tok.VocabSize(); n > vocab {
		return nil, fmt.Errorf("%s: tokenizer has %d tokens, the model %d", s.path, n, vocab)
	}
	return out, nil
}

// besideCheckpoint reads the tokenizer.bin or tok<V>.bin next to a llama2.c
// checkpoint.
func besideCheckpoint(path string, vocab int) (*tokenizerOut, error) {
	dir := filepath.Dir(path)
	for _, name := range []string{llama2cTokenizerFile, fmt.Sprintf("tok%d.bin", vocab)} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return llama2cTokenizer(filepath.Join(dir, name), vocab)
		}
	}
	return nil, fmt.Errorf("%s: no %s or tok%d.bin beside the checkpoint; pass -tokenizer", path, llama2cTokenizerFile, vocab)
}

func tokenizerFromPath(path string, vocab int) (*tokenizerOut, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return hfTokenizer(path)
	}
	if filepath.Ext(path) == ".json" {
		return hfTokenizer(filepath.Dir(path))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, []byte("GGUF")) {
		g, err := loader.ParseGGUF(path, data)
		if err != nil {
			return nil, err
		}
		return ggufTokenizer(path, g.MetaKVs())
	}
	return llama2cTokenizer(path, vocab)
}

// hfTokenizer copies tokenizer.json and the optional files beside it.
func hfTokenizer(dir string) (*tokenizerOut, error) {
	tok, err := tokenizer.FromHFDir(dir)
	if err != nil {
		return nil, err
	}
	out := &tokenizerOut{spec: model.TokenizerSpec{Format: model.TokenizerHF}, tok: tok}
	for i, name := range hfTokenizerFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if i > 0 && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.files = append(out.files, namedFile{name, data})
		out.spec.Files = append(out.spec.Files, name)
	}
	return out, nil
}

// ggufTokenizer writes the tokenizer.* metadata as a GGUF file with no
// tensors, and checks that it reads back as a tokenizer.
func ggufTokenizer(file string, meta []loader.MetaKV) (*tokenizerOut, error) {
	var keep []loader.MetaKV
	for _, kv := range meta {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			keep = append(keep, kv)
		}
	}
	if len(keep) == 0 {
		return nil, &loader.FormatError{File: file, Field: "metadata tokenizer.ggml.model", Offset: -1,
			Err: fmt.Errorf("%w: the GGUF has no tokenizer; pass -tokenizer", loader.ErrNotFound)}
	}
	var buf bytes.Buffer
	if err := loader.WriteGGUF(&buf, 3, keep, nil); err != nil {
		return nil, fmt.Errorf("%s: writing %s: %w", file, ggufTokenizerFile, err)
	}
	g, err := loader.ParseGGUF(ggufTokenizerFile, buf.Bytes())
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(g)
	if err != nil {
		return nil, fmt.Errorf("%s: tokenizer: %w", file, err)
	}
	return &tokenizerOut{spec: model.TokenizerSpec{Format: model.TokenizerGGUF, File: ggufTokenizerFile},
		files: []namedFile{{ggufTokenizerFile, buf.Bytes()}}, tok: tok}, nil
}

func llama2cTokenizer(path string, vocab int) (*tokenizerOut, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromLlama2C(data, vocab)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &tokenizerOut{spec: model.TokenizerSpec{Format: model.TokenizerLlama2C, File: llama2cTokenizerFile},
		files: []namedFile{{llama2cTokenizerFile, data}}, tok: tok}, nil
}

// manifestTokenizer takes over a converted folder's tokenizer.
func manifestTokenizer(s *source, vocab int) (*tokenizerOut, error) {
	spec, err := model.ParseTokenizerSpec(filepath.Join(s.path, "manifest.json"), s.man.Tokenizer)
	if err != nil {
		return nil, err
	}
	if spec == nil {
		return nil, fmt.Errorf("%s: the manifest names no tokenizer; pass -tokenizer", s.path)
	}
	switch spec.Format {
	case model.TokenizerHF:
		return hfTokenizer(s.path)
	case model.TokenizerGGUF:
		g, err := loader.ReadGGUF(filepath.Join(s.path, spec.File))
		if err != nil {
			return nil, err
		}
		return ggufTokenizer(g.File, g.MetaKVs())
	}
	return llama2cTokenizer(filepath.Join(s.path, spec.File), vocab)
}
