package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"wasmllm/loader"
	"wasmllm/model"
)

// TestRoundTripGGUF writes every tensor of real GGUF files (Q4_0, Q8_0, F32)
// and reads them back bit for bit, with several shard sizes.
func TestRoundTripGGUF(t *testing.T) {
	for _, file := range []string{"tiny-llama3-q4_0.gguf", "tiny-qwen3moe-q8_0.gguf", "stories260K.gguf"} {
		g, err := loader.ReadGGUF(testdata(file))
		if err != nil {
			t.Fatal(err)
		}
		arch, _ := g.String("general.architecture")
		for _, shardBytes := range []int64{4 << 10, 100 << 10, DefaultShardBytes} {
			dir := filepath.Join(t.TempDir(), "model")
			w, err := NewWriter(dir, shardBytes)
			if err != nil {
				t.Fatal(err)
			}
			for i := range g.Tensors {
				if err := w.Add(g.TensorAt(i)); err != nil {
					t.Fatal(err)
				}
			}
			m := &Manifest{Arch: arch, Config: configFor(arch), ChatTemplate: "<|im_start|>{{ x }}&"}
			if err := w.Close(m); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			wantVersion := FormatVersion
			for _, ti := range m.Tensors {
				if len(ti.Parts) > 0 {
					wantVersion = FormatVersionParts
				}
			}
			if m.Name != "model" || m.FormatVersion != wantVersion || len(m.Tensors) != len(g.Tensors) {
				t.Fatalf("%s: name %q version %d (want %d) tensors %d", file, m.Name, m.FormatVersion, wantVersion, len(m.Tensors))
			}
			got, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(m, got, sameManifest); d != "" {
				t.Fatalf("%s: manifest read back differs (-wrote +read):\n%s", file, d)
			}
			r, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			var files []string
			for _, s := range m.Shards {
				files = append(files, s.File)
				if s.Bytes > shardBytes {
					t.Errorf("%s: shard %s has %d bytes, limit %d", file, s.File, s.Bytes, shardBytes)
				}
			}
			for i, ti := range g.Tensors {
				want := g.TensorAt(i)
				got, err := r.Tensor(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) || !bytes.Equal(got.Data, want.Data) {
					t.Fatalf("%s: tensor %s differs: %s %v vs %s %v", file, ti.Name, got.DType, got.Shape, want.DType, want.Shape)
				}
			}
			slices.Sort(files)
			want := append(files, ManifestFile)
			slices.Sort(want)
			if d := cmp.Diff(want, listDir(t, dir)); d != "" {
				t.Errorf("%s: folder holds other files:\n%s", file, d)
			}
			if d := cmp.Diff([]string{"model"}, listDir(t, filepath.Dir(dir))); d != "" {
				t.Errorf("%s: leftovers next to the output:\n%s", file, d)
			}
			t.Logf("%s shard %d: %d tensors in %d shards, %d bytes", file, shardBytes, len(m.Tensors), len(m.Shards), m.TotalBytes())
		}
	}
}

// TestShardSplitting checks the packing rule on a hand-computed layout: 256
// alignment, no straddling, a tensor larger than a shard in parts over
// fresh shards (its last shard taking what follows), shards cut at the
// limit.
func TestShardSplitting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	m := writeModel(t, dir, 1024,
		f32Tensor("a", 1, 100), // 400 bytes: shard 0 @0
		f32Tensor("b", 2, 100), // 400: shard 0 @512 (ends 912)
		f32Tensor("c", 3, 100), // 400: 1024+400 > 1024, shard 1 @0
		f32Tensor("d", 4, 750), // 3000 > shard: parts 1024, 1024, 952 in shards 2, 3, 4
		f32Tensor("e", 5, 25),  // 100: 1024+100 > 1024, shard 5 @0
		f32Tensor("f", 6, 256), // 1024: 256+1024 > 1024, shard 6 @0, full
		f32Tensor("g", 7, 64),  // 256: shard 7 @0
		f32Tensor("h", 8, 1),   // 4: shard 7 @256
		f32Tensor("i", 9, 128), // 512: shard 7 @512, ends at 1024: full
		f32Tensor("j", 10, 1))  // 4: shard 8 @0
	type place struct {
		shard  int
		offset int64
	}
	want := []place{{0, 0}, {0, 512}, {1, 0}, {2, 0}, {5, 0}, {6, 0}, {7, 0}, {7, 256}, {7, 512}, {8, 0}}
	var got []place
	for _, ti := range m.Tensors {
		got = append(got, place{ti.Shard, ti.Offset})
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(place{})); d != "" {
		t.Fatalf("placement (-want +got):\n%s", d)
	}
	var sizes []int64
	for _, s := range m.Shards {
		sizes = append(sizes, s.Bytes)
	}
	if d := cmp.Diff([]int64{912, 400, 1024, 1024, 952, 100, 1024, 1024, 4}, sizes); d != "" {
		t.Fatalf("shard sizes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Part{{2, 0, 1024}, {3, 0, 1024}, {4, 0, 952}}, m.Tensors[3].Parts); d != "" || m.FormatVersion != FormatVersionParts {
		t.Fatalf("d's parts (-want +got), format version %d:\n%s", m.FormatVersion, d)
	}
	// Padding is zero, and each shard's name and sha256 match its bytes.
	for i, s := range m.Shards {
		data, err := os.ReadFile(filepath.Join(dir, s.File))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != s.SHA256 || s.File != ShardName(i, s.SHA256) {
			t.Errorf("shard %d: name %s sha %s, content hashes to %x", i, s.File, s.SHA256, sum)
		}
		if i == 0 && !bytes.Equal(data[400:512], make([]byte, 112)) {
			t.Errorf("padding in shard 0 is not zero")
		}
	}
}

func TestNoPartialOutput(t *testing.T) {
	ok := f32Tensor("ok", 1, 300)
	bad := f32Tensor("bad", 2, 10)
	bad.Data = bad.Data[:39]
	cases := []struct {
		name string
		run  func(w *Writer) error
		want error
	}{
		{"size mismatch", func(w *Writer) error { return w.Add(bad) }, loader.ErrCorrupt},
		{"unknown dtype", func(w *Writer) error {
			return w.Add(&loader.Tensor{Name: "x", DType: 77, Shape: []int{1}, Data: []byte{0}})
		}, loader.ErrUnsupported},
		{"duplicate", func(w *Writer) error { return w.Add(ok) }, loader.ErrCorrupt},
		{"zero dim", func(w *Writer) error {
			return w.Add(&loader.Tensor{Name: "z", DType: loader.F32, Shape: []int{0, 4}})
		}, loader.ErrCorrupt},
		{"q4 partial block", func(w *Writer) error {
			return w.Add(&loader.Tensor{Name: "q", DType: loader.Q4_0, Shape: []int{2, 16}, Data: make([]byte, 18)})
		}, loader.ErrCorrupt},
		{"invalid config", func(w *Writer) error {
			c := configFor(model.ArchLlama)
			c.Heads = 3
			return w.Close(&Manifest{Arch: "llama", Config: c})
		}, loader.ErrCorrupt},
		{"arch mismatch", func(w *Writer) error {
			return w.Close(&Manifest{Arch: "qwen3", Config: configFor(model.ArchLlama)})
		}, loader.ErrCorrupt},
		{"bad extra file", func(w *Writer) error { return w.AddFile("../evil.json", nil) }, nil},
		{"aborted", func(w *Writer) error {
			w.Abort()
			return w.Close(&Manifest{Arch: "llama", Config: configFor(model.ArchLlama)})
		}, ErrAborted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			w, err := NewWriter(dir, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Add(ok); err != nil {
				t.Fatal(err)
			}
			err = tc.run(w)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v does not wrap %v", err, tc.want)
			}
			if err2 := w.Close(&Manifest{Arch: "llama", Config: configFor(model.ArchLlama)}); err2 == nil {
				t.Error("Close after a failure succeeded")
			}
			if left := listDir(t, parent); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
			t.Log(err)
		})
	}
}

// TestReplace checks that a second conversion replaces the first model
// atomically, that a failed one leaves the earlier model intact, and that a
// folder that is not a model is never replaced.
func TestReplace(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "m")
	m1 := writeModel(t, dir, 0, f32Tensor("a", 1, 64))

	w, err := NewWriter(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Add(f32Tensor("a", 2, 64))
	if err := w.Close(&Manifest{Arch: "nope", Config: configFor("llama")}); err == nil {
		t.Fatal("invalid manifest accepted")
	}
	if got, err := Read(dir); err != nil || got.Shards[0].SHA256 != m1.Shards[0].SHA256 {
		t.Fatalf("failed conversion disturbed the earlier model: %v", err)
	}

	m2 := writeModel(t, dir, 0, f32Tensor("b", 3, 64))
	got, err := Read(dir)
	if err != nil || got.Tensors[0].Name != "b" {
		t.Fatalf("not replaced: %v", err)
	}
	if d := cmp.Diff([]string{ManifestFile, m2.Shards[0].File}, listDir(t, dir)); d != "" {
		t.Errorf("old files remain:\n%s", d)
	}
	if d := cmp.Diff([]string{"m"}, listDir(t, parent)); d != "" {
		t.Errorf("leftovers:\n%s", d)
	}

	if _, err := NewWriter("/", 0); err == nil {
		t.Error("NewWriter(\"/\") accepted")
	}
	other := filepath.Join(parent, "photos")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "cat.jpg"), []byte("x"), 0o644)
	if _, err := NewWriter(other, 0); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("non-model folder: %v", err)
	}
}

func TestAddFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	w, err := NewWriter(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, name := range []string{"", ".hidden", "a/b", "manifest.json", "shard-00000-0123456789abcdef.bin", "x.partial"} {
		w2, _ := NewWriter(filepath.Join(t.TempDir(), "m"), 0)
		if err := w2.AddFile(name, []byte("{}")); err == nil {
			t.Errorf("AddFile(%q) accepted", name)
		}
	}
	tok := []byte(`{"model":{"type":"BPE"}}`)
	if err := w.AddFile("tokenizer.json", tok); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(f32Tensor("a", 1, 8)); err != nil {
		t.Fatal(err)
	}
	m := &Manifest{Arch: "llama", Config: configFor("llama"), Tokenizer: []byte(`{"kind":"hf","file":"tokenizer.json"}`)}
	if err := w.Close(m); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "tokenizer.json")); err != nil || !bytes.Equal(got, tok) {
		t.Fatalf("tokenizer.json: %q %v", got, err)
	}
	if got, err := Read(dir); err != nil || string(got.Tokenizer) != `{"kind":"hf","file":"tokenizer.json"}` {
		t.Fatalf("tokenizer field: %v", err)
	}
}

// sameManifest compares manifests by what they store: model.Config's
// unexported fields (what a source held beyond that) are not stored.
var sameManifest = cmp.Options{cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(model.Config{})}
