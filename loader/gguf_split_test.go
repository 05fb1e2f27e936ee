package loader

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGGUFSplit: a GGUF written as three parts, opened from any part, has
// the whole file's metadata and every tensor with its bytes; parts out of
// order or missing fail naming the part.
func TestGGUFSplit(t *testing.T) {
	src := filepath.Join("..", "testdata", "models", "tiny-qwen3moe-q8_0.gguf")
	whole, err := ReadGGUF(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := WriteGGUFSplit(dir, "moe", whole, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := GGUFSplitNames("moe-00002-of-00003.gguf"); !slices.Equal(got, []string{"moe-00001-of-00003.gguf", "moe-00002-of-00003.gguf", "moe-00003-of-00003.gguf"}) {
		t.Fatalf("GGUFSplitNames: %v", got)
	}
	g, err := OpenGGUF(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	arch, _ := g.String("general.architecture")
	want, _ := whole.String("general.architecture")
	if len(g.Tensors) != len(whole.Tensors) || arch != want || want == "" {
		t.Fatalf("%d tensors, arch %q; want %d, %q", len(g.Tensors), arch, len(whole.Tensors), want)
	}
	for i := range whole.Tensors {
		want := whole.TensorAt(i)
		got, err := g.Tensor(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Data, want.Data) || !slices.Equal(got.Shape, want.Shape) || got.DType != want.DType {
			t.Fatalf("tensor %s differs after the split", want.Name)
		}
	}
	// Part 3 standing in for part 2.
	swapped := t.TempDir()
	for i, p := range []string{paths[0], paths[2], paths[2]} {
		data, _ := os.ReadFile(p)
		os.WriteFile(filepath.Join(swapped, filepath.Base(paths[i])), data, 0o644)
	}
	_, err = OpenGGUF(filepath.Join(swapped, filepath.Base(paths[0])))
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Field != "metadata split.no" || filepath.Base(fe.File) != filepath.Base(paths[1]) {
		t.Errorf("parts out of order: %v", err)
	}
	os.Remove(paths[2])
	if _, err := OpenGGUF(paths[0]); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing part: %v", err)
	}
}
