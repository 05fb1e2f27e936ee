package source

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"wasmllm/loader"
	"wasmllm/model"
)

func isGGUF(_ string, magic []byte) bool { return string(magic) == "GGUF" }

// openGGUF reads a GGUF file whole, or with lazy only its header, the
// tensors staying in the file.
func openGGUF(s *Source, lazy bool) error {
	var err error
	if !lazy && loader.GGUFSplitNames(filepath.Base(s.Path)) == nil {
		if s.GGUF, err = loader.ReadGGUF(s.Path); err != nil {
			return err
		}
		s.Weights, err = model.FromGGUFOptions(s.GGUF, s.load)
		return err
	}
	if !lazy { // a split GGUF: every part read now, then closed
		if s.GGUF, err = loader.OpenGGUF(s.Path); err != nil {
			return err
		}
		defer s.GGUF.Close()
		s.Weights, err = model.FromGGUFOptions(s.GGUF, s.load)
		return err
	}
	if s.GGUF, err = loader.OpenGGUF(s.Path); err != nil {
		return err
	}
	s.close = s.GGUF.Close
	s.Weights, err = model.FromGGUFLazyOptions(s.GGUF, s.load)
	return err
}

// OpenGGUFAt opens a GGUF file read through readers, one part each (a
// split GGUF's parts in order, loader.OpenGGUFParts; else one), as Open
// opens a path with Options.Lazy: the headers read now, each tensor when
// loaded. The browser's worker opens a GGUF on a web server or in a local
// File this way. Close closes the readers that are io.Closers.
func OpenGGUFAt(parts ...loader.GGUFPart) (*Source, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("source: no GGUF parts")
	}
	name := parts[0].Name
	s := &Source{Path: name, Format: FormatGGUF}
	var err error
	if s.GGUF, err = loader.OpenGGUFParts(parts); err != nil {
		return nil, err
	}
	s.close = s.GGUF.Close
	if s.Weights, err = model.FromGGUFLazy(s.GGUF); err != nil {
		s.Close()
		return nil, err
	}
	if s.Tokenizer, err = ggufTokenizer(s); err == nil {
		if err = checkVocab(s.Tokenizer, s.Weights.Config.Vocab); err != nil {
			err = fmt.Errorf("%s: %w", name, err)
		}
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// ggufTokenizer takes the tokenizer from the GGUF's own metadata.
func ggufTokenizer(s *Source) (*Tokenizer, error) {
	t, err := ggufMetaTokenizer(s.Path, s.GGUF.MetaKVs())
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, &loader.FormatError{File: s.Path, Field: "metadata tokenizer.ggml.model", Offset: -1,
			Err: fmt.Errorf("%w: the GGUF has no tokenizer; pass -tokenizer", loader.ErrNotFound)}
	}
	return t, nil
}

// ggufMetaTokenizer writes the tokenizer.* metadata of the GGUF file as a
// GGUF with no tensors (GGUFTokenizerFile, as a converted folder holds it)
// and builds the tokenizer from that; nil when there is no tokenizer.*
// metadata.
func ggufMetaTokenizer(file string, meta []loader.MetaKV) (*Tokenizer, error) {
	var keep []loader.MetaKV
	for _, kv := range meta {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			keep = append(keep, kv)
		}
	}
	if len(keep) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := loader.WriteGGUF(&buf, 3, keep, nil); err != nil {
		return nil, fmt.Errorf("%s: writing %s: %w", file, GGUFTokenizerFile, err)
	}
	t, err := newTokenizer("", model.TokenizerSpec{Format: model.TokenizerGGUF, File: GGUFTokenizerFile}, []File{{GGUFTokenizerFile, buf.Bytes()}}, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: tokenizer: %w", file, err)
	}
	return t, nil
}
