package manifest

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"wasmllm/loader"
)

// stackedTensor is a Mixed (3, 32) tensor: one Q8_0 row, then two F32
// rows.
func stackedTensor(t *testing.T) *loader.Tensor {
	t.Helper()
	q := make([]float32, 32)
	for i := range q {
		q[i] = float32(i) / 7
	}
	qd, err := loader.Quantize(loader.Q8_0, q)
	if err != nil {
		t.Fatal(err)
	}
	f := f32Tensor("f", 2, 64)
	f.Shape = []int{2, 32}
	s, err := loader.Stacked("s", []*loader.Tensor{{Name: "q", DType: loader.Q8_0, Shape: []int{1, 32}, Data: qd}, f})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStackRoundTrip writes a Mixed tensor: its row blocks become entries
// of their own types, the tensor an entry of dtype "mixed" naming them
// (format_version 3), and Reader gives the stack back with the same bytes.
func TestStackRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	s := stackedTensor(t)
	m := writeModel(t, dir, 1<<20, f32Tensor("a", 1, 10), s)
	if m.FormatVersion != FormatVersionStack {
		t.Errorf("format_version %d, want %d", m.FormatVersion, FormatVersionStack)
	}
	ti, ok := m.Lookup("s")
	if !ok || ti.DType != "mixed" || len(ti.Stack) != 2 || ti.Stack[0] != "s#0" || ti.Stack[1] != "s#1" || ti.Bytes != 34+256 || len(ti.Pieces()) != 0 {
		t.Fatalf("stacked entry %+v", ti)
	}
	if b, _ := m.Lookup("s#0"); b == nil || b.DType != "Q8_0" || b.Bytes != 34 {
		t.Errorf("row block 0: %+v, want Q8_0 of 34 bytes", b)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Tensor("s")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := s.Bytes()
	gb, _ := got.Bytes()
	if got.DType != loader.Mixed || len(got.Stack) != 2 || got.Stack[0].DType != loader.Q8_0 || got.Stack[1].DType != loader.F32 || !bytes.Equal(gb, want) {
		t.Errorf("read back %s %v with %d blocks; bytes equal %v", got.DType, got.Shape, len(got.Stack), bytes.Equal(gb, want))
	}
}

// TestStackCorrupt edits a stacked manifest: each inconsistency is a
// FormatError naming the field.
func TestStackCorrupt(t *testing.T) {
	base := writeModel(t, filepath.Join(t.TempDir(), "m"), 1<<20, stackedTensor(t))
	at := func(m *Manifest, name string) *TensorInfo { ti, _ := m.Lookup(name); return ti }
	for _, tc := range []struct {
		name, field string
		edit        func(m *Manifest)
	}{
		{"version", `"s" stack`, func(m *Manifest) { m.FormatVersion = FormatVersionParts }},
		{"rows", `"s" stack`, func(m *Manifest) { at(m, "s").Shape = []int{4, 32} }},
		{"bytes", `"s" stack`, func(m *Manifest) { at(m, "s").Bytes++ }},
		{"missing block", `"s" stack[1]`, func(m *Manifest) { at(m, "s").Stack[1] = "nope" }},
		{"block twice", `"s" stack[1]`, func(m *Manifest) { at(m, "s").Stack[1] = "s#0" }},
		{"itself", `"s" stack[0]`, func(m *Manifest) { at(m, "s").Stack[0] = "s" }},
		{"columns", `"s" stack[1]`, func(m *Manifest) { b := at(m, "s#1"); b.Shape, b.Bytes = []int{4, 16}, 256 }},
		{"no stack", `"s" stack`, func(m *Manifest) { at(m, "s").Stack = nil }},
		{"stack on a plain tensor", `"s#0" stack`, func(m *Manifest) { at(m, "s#0").Stack = []string{"s#1", "s#1"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := clone(t, base)
			tc.edit(m)
			data, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(data)
			var fe *loader.FormatError
			if !errors.As(err, &fe) || !bytes.Contains([]byte(fe.Field), []byte(tc.field)) {
				t.Fatalf("got %v, want a FormatError on %s", err, tc.field)
			}
			t.Log(err)
		})
	}
}
