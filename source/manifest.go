package source

import (
	"os"
	"path/filepath"

	"wasmllm/manifest"
	"wasmllm/model"
)

func isManifest(path string, _ []byte) bool { return exists(path, manifest.ManifestFile) }

// openManifest reads a converted folder, verifying every shard's sha256.
func openManifest(s *Source, _ bool) error {
	r, err := manifest.Open(s.Path)
	if err != nil {
		return err
	}
	s.Manifest = r.Manifest()
	names := make([]string, len(s.Manifest.Tensors))
	for i := range s.Manifest.Tensors {
		names[i] = s.Manifest.Tensors[i].Name
	}
	s.Weights, err = model.FromCanonical(s.Path, s.Manifest.Config, names, r)
	return err
}

// manifestTokenizer reads the tokenizer files the manifest names (see
// model.TokenizerSpec), each checked against its sha256.
func manifestTokenizer(s *Source) (*Tokenizer, error) {
	spec, err := model.ParseTokenizerSpec(filepath.Join(s.Path, manifest.ManifestFile), s.Manifest.Tokenizer)
	if err != nil {
		return nil, err
	}
	if spec == nil {
		return nil, &NoTokenizerError{Path: s.Path, Reason: "the manifest names no tokenizer"}
	}
	files := map[string][]byte{}
	for _, name := range spec.Names() {
		if files[name], err = os.ReadFile(filepath.Join(s.Path, name)); err != nil {
			return nil, err
		}
	}
	tok, err := build(s.Path, spec, files, s.Weights.Config.Vocab)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{Spec: *spec, Tok: tok}
	for _, name := range spec.Names() {
		t.Files = append(t.Files, File{name, files[name]})
	}
	return t, nil
}
