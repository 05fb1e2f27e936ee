package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
)

// TestTokenizerChecksum: a converted folder whose tokenizer file does not
// match the manifest's sha256 is refused, naming the file.
func TestTokenizerChecksum(t *testing.T) {
	dir := t.TempDir()
	src := "../models/stories260K"
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "tokenizer.gguf" {
			data[len(data)-1] ^= 1
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Load(dir, cpu.New(0), LoadOptions{})
	var fe *loader.FormatError
	if !errors.Is(err, loader.ErrChecksum) || !errors.As(err, &fe) || !strings.HasSuffix(fe.File, "tokenizer.gguf") {
		t.Errorf("got %v, want a checksum FormatError naming tokenizer.gguf", err)
	}
}
