package source

import (
	"wasmllm/model"
	"wasmllm/tokenizer"
)

func isHF(path string, _ []byte) bool { return exists(path, "config.json") }

// openHF reads a Hugging Face folder's config.json and safetensors.
func openHF(s *Source, lazy bool) error {
	var err error
	if !lazy {
		s.Weights, err = model.FromHFOptions(s.Path, s.load)
		return err
	}
	s.Weights, s.close, err = model.FromHFLazyOptions(s.Path, s.load)
	return err
}

// hfTokenizer reads the tokenizer files in the folder (tokenizer.json is
// required).
func hfTokenizer(s *Source) (*Tokenizer, error) { return hfDirTokenizer(s.Path) }

// hfDirTokenizer reads the tokenizer.HFFiles in dir, or beside the
// tokenizer.json dir names.
func hfDirTokenizer(dir string) (*Tokenizer, error) {
	data, err := tokenizer.ReadHFDir(dir)
	if err != nil {
		return nil, err
	}
	spec := model.TokenizerSpec{Format: model.TokenizerHF}
	var files []File
	for _, name := range tokenizer.HFFiles {
		if b, ok := data[name]; ok {
			spec.Files = append(spec.Files, name)
			files = append(files, File{name, b})
		}
	}
	return newTokenizer(hfDir(dir), spec, files, 0)
}
