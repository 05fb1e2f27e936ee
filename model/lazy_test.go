package model_test

import (
	"bytes"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/source"
)

// openLazy opens path with FromGGUFLazy or FromHFLazy.
func openLazy(t *testing.T, path string) *model.Weights {
	t.Helper()
	if filepath.Ext(path) != ".gguf" {
		w, closeFn, err := model.FromHFLazy(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeFn() })
		return w
	}
	g, err := loader.OpenGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	w, err := model.FromGGUFLazy(g)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestLazyMatchesLoad checks that every tensor from FromGGUFLazy and
// FromHFLazy is lazy and loads the bytes Load gives it, merged tensors
// included.
func TestLazyMatchesLoad(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/models/*.gguf")
	hf, _ := filepath.Glob("../testdata/hf/*")
	for _, path := range append(paths, hf...) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want, err := source.Weights(path)
			if err != nil {
				t.Fatal(err)
			}
			got := openLazy(t, path)
			if !reflect.DeepEqual(got.Config, want.Config) || !slices.Equal(got.Names(), want.Names()) {
				t.Fatalf("lazy config %+v and tensors %v, want %+v and %v", got.Config, got.Names(), want.Config, want.Names())
			}
			for _, name := range want.Names() {
				g, w := got.Tensors[name], want.Tensors[name]
				if !g.Lazy() {
					t.Errorf("%s is not lazy", name)
				}
				b, err := g.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				if g.Name != name || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(b, w.Data) {
					t.Errorf("%s: lazy %s %s %v, %d bytes; want %s %v, %d bytes", name, g.Name, g.DType, g.Shape, len(b), w.DType, w.Shape, len(w.Data))
				}
			}
		})
	}
}
