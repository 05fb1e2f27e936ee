package loading

import (
	"errors"
	"fmt"

	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/source"
	"wasmllm/tokenizer"
)

// TokenizerFiles returns the files of the model folder the tokenizer is
// read from, with their sha256 (model.TokenizerSpec); nil when the manifest
// names no tokenizer.
func TokenizerFiles(m *manifest.Manifest) (*model.TokenizerSpec, error) {
	spec, err := model.ParseTokenizerSpec(manifest.ManifestFile, m.Tokenizer)
	if err != nil {
		return nil, &ModelError{Msg: err.Error(), Err: err}
	}
	return spec, nil
}

// BuildTokenizer builds the tokenizer m names (source.BuildTokenizer, as
// natively), with files holding the contents of TokenizerFiles(m), each
// checked against its sha256. A manifest without a tokenizer gives nil.
func BuildTokenizer(m *manifest.Manifest, files map[string][]byte) (*tokenizer.Tokenizer, error) {
	spec, err := TokenizerFiles(m)
	if err != nil || spec == nil {
		return nil, err
	}
	for _, n := range spec.Names() {
		if _, ok := files[n]; !ok {
			return nil, fmt.Errorf("tokenizer file %s was not fetched", n)
		}
	}
	tok, err := source.BuildTokenizer("", spec, files, m.Config.Vocab)
	var ve *source.VocabError
	switch {
	case err == nil:
		return tok, nil
	case errors.Is(err, manifest.ErrChecksum):
		return nil, err
	case errors.As(err, &ve):
		return nil, modelErrorf("tokenizer: %d tokens, the model has %d", ve.Tokens, ve.Vocab)
	}
	return nil, &ModelError{Msg: "tokenizer: " + err.Error(), Err: err}
}
