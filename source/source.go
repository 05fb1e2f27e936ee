// Package source opens model sources: a GGUF file, a Hugging Face folder, a
// llama2.c checkpoint (with its tokenizer beside it) or a converted folder,
// each as the canonical weights of package model plus the tokenizer and the
// files it is built from. It is the one place that knows the formats: Open
// detects one, reads its weights through packages loader, model and manifest,
// and finds its tokenizer, which BuildTokenizer builds from a
// model.TokenizerSpec and the files' bytes, the same way natively and in the
// browser (wasm/loading).
//
// A new format is one entry in formats, with the functions that detect it,
// open its weights and find its tokenizer.
package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/tokenizer"
)

// Format names a model source format.
type Format string

// Source formats Open understands.
const (
	FormatGGUF     Format = "gguf"
	FormatHF       Format = "hf"       // folder with config.json and *.safetensors
	FormatLlama2C  Format = "llama2c"  // legacy llama2.c .bin checkpoint
	FormatManifest Format = "manifest" // converted folder with manifest.json
)

// format is how one kind of source is detected and opened.
type format struct {
	name Format
	dir  bool // a folder, not a file
	// detect reports whether path is in this format; magic holds a file's
	// first bytes (up to 4).
	detect func(path string, magic []byte) bool
	// open reads the weights into s (and whatever else of s the format
	// fills); with lazy, tensors may stay in their files until loaded, and
	// s.close releases them.
	open func(s *Source, lazy bool) error
	// tokenizer finds the tokenizer the source holds or has beside it; a
	// *NoTokenizerError when it has none.
	tokenizer func(s *Source) (*Tokenizer, error)
}

// formats lists every format in the order Detect tries them.
var formats = []format{
	{FormatManifest, true, isManifest, openManifest, manifestTokenizer},
	{FormatHF, true, isHF, openHF, hfTokenizer},
	{FormatGGUF, false, isGGUF, openGGUF, ggufTokenizer},
	{FormatLlama2C, false, isLlama2C, openLlama2C, llama2cTokenizer},
}

// Detect tells the format of path from its contents.
func Detect(path string) (Format, error) {
	f, err := detect(path)
	if err != nil {
		return "", err
	}
	return f.name, nil
}

func detect(path string) (*format, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var magic []byte
	if !st.IsDir() {
		fh, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		var b [4]byte
		n, _ := fh.Read(b[:])
		fh.Close()
		magic = b[:n]
	}
	for i := range formats {
		if f := &formats[i]; f.dir == st.IsDir() && f.detect(path, magic) {
			return f, nil
		}
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: folder has neither manifest.json nor config.json", path)
	}
	return nil, &loader.FormatError{File: path, Field: "magic", Offset: 0, Err: fmt.Errorf("%w: not GGUF, and not a .bin checkpoint", loader.ErrBadMagic)}
}

// exists reports whether name is in dir.
func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// Options configure Open.
type Options struct {
	// Tokenizer, when set, is where the tokenizer comes from instead of the
	// source: a tokenizer.json or its folder, a GGUF file, or a llama2.c
	// tokenizer.bin (OpenTokenizer).
	Tokenizer string
	// Lazy leaves the tensors of GGUF files and Hugging Face folders in
	// their files: each tensor's Data is nil and its Load reads it (merged
	// ones included), so that a caller going tensor by tensor holds one at a
	// time (cmd/convert). Close releases the files. Other formats are read
	// whole.
	Lazy bool
	// MTP loads a Qwen3.5 GGUF's or Hugging Face folder's NextN/MTP block
	// (model.LoadOptions.MTP: the draft model of speculative decoding);
	// other loads skip it.
	MTP bool
}

// Source is an opened model source.
type Source struct {
	Path    string
	Format  Format
	Weights *model.Weights
	// Tokenizer is the source's tokenizer (or the one Options.Tokenizer
	// names) with its files; nil when it has none, and NoTokenizer says why.
	Tokenizer   *Tokenizer
	NoTokenizer *NoTokenizerError
	// load is what the weights are read with beyond the trunk.
	load model.LoadOptions
	// GGUF is a GGUF source's file: its metadata, and with Options.Lazy the
	// reader of its tensors until Close.
	GGUF *loader.GGUF
	// Manifest is a converted folder's manifest.
	Manifest *manifest.Manifest

	close func() error
}

// Close releases the files a lazy source keeps open.
func (s *Source) Close() error {
	if s.close == nil {
		return nil
	}
	err := s.close()
	s.close = nil
	return err
}

// Tok returns the source's tokenizer, or nil when it has none.
func (s *Source) Tok() *tokenizer.Tokenizer {
	if s.Tokenizer == nil {
		return nil
	}
	return s.Tokenizer.Tok
}

// NoTokenizerError says why a source has no tokenizer: a converted folder
// whose manifest names none, or a llama2.c checkpoint with no tokenizer
// beside it. Open returns it in Source.NoTokenizer, not as its error: the
// engine runs such a model on token ids.
type NoTokenizerError struct {
	Path   string
	Reason string
}

func (e *NoTokenizerError) Error() string { return e.Path + ": " + e.Reason }

// Open reads the model at path: its weights, then its tokenizer (from
// o.Tokenizer when set, else the source's own), which must not have more
// tokens than the model.
func Open(path string, o Options) (*Source, error) {
	f, err := detect(path)
	if err != nil {
		return nil, err
	}
	s := &Source{Path: path, Format: f.name, load: model.LoadOptions{MTP: o.MTP}}
	if err := f.open(s, o.Lazy); err != nil {
		s.Close()
		return nil, err
	}
	if o.Tokenizer != "" {
		s.Tokenizer, err = openTokenizer(o.Tokenizer, s.Weights.Config.Vocab)
	} else {
		s.Tokenizer, err = f.tokenizer(s)
	}
	var none *NoTokenizerError
	switch {
	case errors.As(err, &none):
		s.Tokenizer, s.NoTokenizer, err = nil, none, nil
	case err == nil:
		if err = checkVocab(s.Tokenizer, s.Weights.Config.Vocab); err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Load reads the model at path whole: its weights and its tokenizer (nil
// when it has none), the tokenizer from tokPath when set.
func Load(path, tokPath string) (*model.Weights, *tokenizer.Tokenizer, error) {
	s, err := Open(path, Options{Tokenizer: tokPath})
	if err != nil {
		return nil, nil, err
	}
	return s.Weights, s.Tok(), nil
}

// Weights reads the model at path whole, without its tokenizer.
func Weights(path string) (*model.Weights, error) {
	f, err := detect(path)
	if err != nil {
		return nil, err
	}
	s := &Source{Path: path, Format: f.name}
	if err := f.open(s, false); err != nil {
		return nil, err
	}
	return s.Weights, nil
}
