package model

import (
	"fmt"
	"os"
	"path/filepath"

	"wasmllm/loader"
)

// Format names a model source format.
type Format string

// Source formats Load understands.
const (
	FormatGGUF     Format = "gguf"
	FormatHF       Format = "hf"       // folder with config.json and *.safetensors
	FormatLlama2C  Format = "llama2c"  // legacy llama2.c .bin checkpoint
	FormatManifest Format = "manifest" // converted folder with manifest.json
)

// DetectFormat tells the format of path from its contents.
func DetectFormat(path string) (Format, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "manifest.json")); err == nil {
			return FormatManifest, nil
		}
		if _, err := os.Stat(filepath.Join(path, "config.json")); err == nil {
			return FormatHF, nil
		}
		return "", fmt.Errorf("%s: folder has neither manifest.json nor config.json", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := f.Read(magic[:]); err == nil && string(magic[:]) == "GGUF" {
		return FormatGGUF, nil
	}
	if filepath.Ext(path) == ".bin" {
		return FormatLlama2C, nil
	}
	return "", &loader.FormatError{File: path, Field: "magic", Offset: 0, Err: fmt.Errorf("%w: not GGUF, and not a .bin checkpoint", loader.ErrBadMagic)}
}

// loaders maps formats to their readers; sources in other files register
// themselves here.
var loaders = map[Format]func(path string) (*Weights, error){
	FormatGGUF: func(path string) (*Weights, error) {
		g, err := loader.ReadGGUF(path)
		if err != nil {
			return nil, err
		}
		return FromGGUF(g)
	},
}

// Load reads a model from a GGUF file, a Hugging Face folder, a llama2.c
// checkpoint or a converted folder.
func Load(path string) (*Weights, error) {
	f, err := DetectFormat(path)
	if err != nil {
		return nil, err
	}
	l, ok := loaders[f]
	if !ok {
		return nil, fmt.Errorf("%s: %s models are not supported yet", path, f)
	}
	return l(path)
}
