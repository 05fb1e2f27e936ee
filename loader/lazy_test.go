package loader

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// lazySource is what GGUF and Safetensors share: tensors read now or left
// in the file.
type lazySource interface {
	Tensor(name string) (*Tensor, error)
	LazyTensor(name string) (*Tensor, error)
}

// TestLazyTensor checks that LazyTensor leaves the data unread and that its
// Load reads what Tensor does, for a GGUF opened or read whole and for
// safetensors.
func TestLazyTensor(t *testing.T) {
	opened, err := OpenGGUF(modelsDir + "tiny-qwen3moe-q4_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	whole, err := ReadGGUF(modelsDir + "tiny-qwen3moe-q4_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	st, err := OpenSafetensors(hfDir + "tiny-qwen3moe")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ggufNames []string
	for _, ti := range opened.Tensors {
		ggufNames = append(ggufNames, ti.Name)
	}
	for _, c := range []struct {
		name  string
		src   lazySource
		names []string
	}{{"OpenGGUF", opened, ggufNames}, {"ReadGGUF", whole, ggufNames}, {"safetensors", st, st.Names()}} {
		t.Run(c.name, func(t *testing.T) {
			for _, name := range c.names {
				lt, err := c.src.LazyTensor(name)
				if err != nil {
					t.Fatal(err)
				}
				if !lt.Lazy() || lt.CheckSize() != nil {
					t.Fatalf("%s: lazy %v, CheckSize %v", name, lt.Lazy(), lt.CheckSize())
				}
				want, err := c.src.Tensor(name)
				if err != nil {
					t.Fatal(err)
				}
				got, err := lt.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				if lt.Name != want.Name || lt.DType != want.DType || !slices.Equal(lt.Shape, want.Shape) || !bytes.Equal(got, want.Data) {
					t.Errorf("%s: lazy %s %v and %d bytes, read %s %v and %d bytes", name, lt.DType, lt.Shape, len(got), want.DType, want.Shape, len(want.Data))
				}
			}
			if _, err := c.src.LazyTensor("missing.weight"); !errors.Is(err, ErrNotFound) {
				t.Errorf("missing tensor: %v", err)
			}
		})
	}
}

// TestLazyTensorShrunk: a GGUF cut short after it was opened gives a typed
// error naming the file and offset when a lazy tensor is loaded.
func TestLazyTensorShrunk(t *testing.T) {
	data, err := os.ReadFile(modelsDir + "tiny-qwen3-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, t.TempDir(), "m.gguf", data)
	g, err := OpenGGUF(p)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	last := g.Tensors[0]
	for _, ti := range g.Tensors {
		if ti.Offset > last.Offset {
			last = ti
		}
	}
	lt, err := g.LazyTensor(last.Name)
	if err != nil {
		t.Fatal(err)
	}
	cut := last.Offset + last.Size/2
	if err := os.Truncate(p, cut); err != nil {
		t.Fatal(err)
	}
	_, err = lt.Bytes()
	var fe *FormatError
	if !errors.As(err, &fe) || !errors.Is(err, ErrTruncated) || fe.File != p || fe.Offset != cut {
		t.Fatalf("got %v, want a FormatError for %s at byte %d", err, filepath.Base(p), cut)
	}
}

// TestTensorBytes checks Bytes on in-memory and lazy tensors: a Load that
// returns the wrong size, or fails, is an error; F32 loads.
func TestTensorBytes(t *testing.T) {
	n := 0
	x := &Tensor{Name: "x", DType: F32, Shape: []int{2, 3}, Load: func() ([]byte, error) { n++; return make([]byte, 24), nil }}
	if err := x.CheckSize(); err != nil {
		t.Fatal(err)
	}
	if f, err := x.F32(); err != nil || len(f) != 6 {
		t.Fatalf("F32: %v %v", f, err)
	}
	if b, err := x.Bytes(); err != nil || len(b) != 24 || n != 2 {
		t.Fatalf("Bytes: %d bytes, %v, %d loads", len(b), err, n)
	}
	x.Load = func() ([]byte, error) { return make([]byte, 20), nil }
	if _, err := x.Bytes(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short load: %v", err)
	}
	x.Load = func() ([]byte, error) { return nil, ErrTruncated }
	if _, err := x.Bytes(); !errors.Is(err, ErrTruncated) {
		t.Errorf("failing load: %v", err)
	}
	x.Data = make([]byte, 20)
	if x.Lazy() || x.CheckSize() == nil {
		t.Errorf("in-memory tensor: lazy %v, CheckSize passes a short Data", x.Lazy())
	}
	if b, err := x.Bytes(); err != nil || len(b) != 20 {
		t.Errorf("Bytes of an in-memory tensor: %d bytes, %v", len(b), err)
	}
}
