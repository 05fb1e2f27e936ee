package source

import (
	"fmt"
	"path/filepath"

	"wasmllm/loader"
	"wasmllm/model"
)

func isLlama2C(path string, _ []byte) bool { return filepath.Ext(path) == ".bin" }

func openLlama2C(s *Source, _ bool) error {
	m, err := loader.ReadLlama2C(s.Path)
	if err != nil {
		return err
	}
	s.Weights, err = model.FromLlama2C(m)
	return err
}

// llama2cTokenizer reads the tokenizer.bin or tok<V>.bin beside the
// checkpoint.
func llama2cTokenizer(s *Source) (*Tokenizer, error) {
	vocab := s.Weights.Config.Vocab
	dir := filepath.Dir(s.Path)
	for _, name := range []string{Llama2CTokenizerFile, fmt.Sprintf("tok%d.bin", vocab)} {
		if exists(dir, name) {
			return llama2cFileTokenizer(filepath.Join(dir, name), vocab)
		}
	}
	return nil, &NoTokenizerError{Path: s.Path, Reason: fmt.Sprintf("no %s or tok%d.bin beside the checkpoint", Llama2CTokenizerFile, vocab)}
}
