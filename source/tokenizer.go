package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/tokenizer"
)

// Tokenizer file names in a converted folder, besides tokenizer.HFFiles.
const (
	GGUFTokenizerFile    = "tokenizer.gguf" // the tokenizer.* metadata of a GGUF, with no tensors
	Llama2CTokenizerFile = "tokenizer.bin"  // a llama2.c tokenizer
)

// File is one tokenizer file: its name in a model folder and its contents.
type File struct {
	Name string
	Data []byte
}

// Tokenizer is a model's tokenizer with the files it is built from, as a
// converted folder holds them: cmd/convert writes Files and puts Spec in
// the manifest.
type Tokenizer struct {
	Spec  model.TokenizerSpec // with every file's sha256
	Files []File              // in Spec.Names() order
	Tok   *tokenizer.Tokenizer
}

// newTokenizer builds the tokenizer of files, which spec describes but for
// the sha256, computed here; dir and vocab are BuildTokenizer's.
func newTokenizer(dir string, spec model.TokenizerSpec, files []File, vocab int) (*Tokenizer, error) {
	spec.SHA256 = map[string]string{}
	data := make(map[string][]byte, len(files))
	for _, f := range files {
		sum := sha256.Sum256(f.Data)
		spec.SHA256[f.Name] = hex.EncodeToString(sum[:])
		data[f.Name] = f.Data
	}
	tok, err := build(dir, &spec, data, vocab)
	if err != nil {
		return nil, err
	}
	return &Tokenizer{Spec: spec, Files: files, Tok: tok}, nil
}

// BuildTokenizer builds the tokenizer spec describes from files, the
// contents of spec.Names(), after checking each against its sha256 in spec
// (a mismatch is a *loader.FormatError wrapping loader.ErrChecksum). vocab
// is the model's vocabulary: a llama2.c tokenizer holds that many tokens,
// and a tokenizer with more is a *VocabError (0 skips the check, and reads
// a llama2.c tokenizer to its end).
//
// dir is where the files were read, for errors: each file is named
// filepath.Join(dir, name). With dir empty, files are named by their names
// alone, and a llama2.c tokenizer's errors name no file.
//
// Every tokenizer is built here: natively from the files of a converted
// folder (or those made from a GGUF, a Hugging Face folder or a llama2.c
// tokenizer.bin, Open), and in the browser from the fetched files.
func BuildTokenizer(dir string, spec *model.TokenizerSpec, files map[string][]byte, vocab int) (*tokenizer.Tokenizer, error) {
	tok, err := build(dir, spec, files, vocab)
	if err != nil {
		return nil, err
	}
	if err := checkVocab(&Tokenizer{Tok: tok}, vocab); err != nil {
		return nil, err
	}
	return tok, nil
}

// build is BuildTokenizer without the vocabulary check.
func build(dir string, spec *model.TokenizerSpec, files map[string][]byte, vocab int) (*tokenizer.Tokenizer, error) {
	path := func(name string) string { return filepath.Join(dir, name) }
	for _, name := range spec.Names() {
		data, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("%s: tokenizer file missing", path(name))
		}
		if err := spec.Verify(path(name), name, data); err != nil {
			return nil, err
		}
	}
	switch spec.Format {
	case model.TokenizerHF:
		hf := make(map[string][]byte, len(spec.Files))
		for _, name := range spec.Files {
			hf[name] = files[name]
		}
		return tokenizer.FromHFFiles(dir, hf)
	case model.TokenizerGGUF:
		g, err := loader.ParseGGUF(path(spec.File), files[spec.File])
		if err != nil {
			return nil, err
		}
		return tokenizer.FromGGUF(g)
	case model.TokenizerLlama2C:
		tok, err := tokenizer.FromLlama2C(files[spec.File], vocab)
		if err != nil && dir != "" {
			err = fmt.Errorf("%s: %w", path(spec.File), err)
		}
		return tok, err
	}
	return nil, fmt.Errorf("%w: tokenizer format %q", loader.ErrUnsupported, spec.Format)
}

// VocabError is a tokenizer with more tokens than the model has
// embeddings.
type VocabError struct {
	Tokens, Vocab int
}

func (e *VocabError) Error() string {
	return fmt.Sprintf("tokenizer has %d tokens, the model %d", e.Tokens, e.Vocab)
}

func checkVocab(t *Tokenizer, vocab int) error {
	if t != nil && vocab > 0 && t.Tok.VocabSize() > vocab {
		return &VocabError{Tokens: t.Tok.VocabSize(), Vocab: vocab}
	}
	return nil
}

// OpenTokenizer reads the tokenizer at path: a tokenizer.json or its
// folder, a GGUF file's tokenizer.* metadata, or a llama2.c tokenizer.bin of
// vocab tokens (vocab 0: to the end of the file; else no more than vocab
// tokens are taken).
func OpenTokenizer(path string, vocab int) (*Tokenizer, error) {
	t, err := openTokenizer(path, vocab)
	if err != nil {
		return nil, err
	}
	if err := checkVocab(t, vocab); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

func openTokenizer(path string, vocab int) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() || filepath.Ext(path) == ".json" {
		return hfDirTokenizer(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	f.Close()
	if string(magic[:n]) != "GGUF" {
		return llama2cFileTokenizer(path, vocab)
	}
	g, err := loader.OpenGGUF(path)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	t, err := ggufMetaTokenizer(path, g.MetaKVs())
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, &loader.FormatError{File: path, Field: "metadata tokenizer.ggml.model", Offset: -1,
			Err: fmt.Errorf("%w: the GGUF has no tokenizer", loader.ErrNotFound)}
	}
	return t, nil
}

// llama2cFileTokenizer reads the llama2.c tokenizer at path, which a
// converted folder holds as Llama2CTokenizerFile.
func llama2cFileTokenizer(path string, vocab int) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := newTokenizer("", model.TokenizerSpec{Format: model.TokenizerLlama2C, File: Llama2CTokenizerFile}, []File{{Llama2CTokenizerFile, data}}, vocab)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// hfDir is the folder of the Hugging Face tokenizer at path: path, or the
// folder of the tokenizer.json it names.
func hfDir(path string) string {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return filepath.Dir(path)
	}
	return path
}
