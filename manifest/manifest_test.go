package manifest

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"wasmllm/loader"
	"wasmllm/model"
)

// baseModel writes a small valid model of three shards and returns its
// folder and manifest.
func baseModel(t *testing.T) (string, *Manifest) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	q := &loader.Tensor{Name: "q", DType: loader.Q4, Shape: []int{4, 64}, Data: make([]byte, 4*64/2+4*2*2)}
	m := writeModel(t, dir, 1024, f32Tensor("a", 1, 100), f32Tensor("b", 2, 100), f32Tensor("c", 3, 200), q)
	if len(m.Shards) != 3 {
		t.Fatalf("base model has %d shards", len(m.Shards))
	}
	return dir, m
}

// TestValidateCorrupt feeds broken manifests to Parse and checks that each
// error is a FormatError naming the right file, field and offset.
func TestValidateCorrupt(t *testing.T) {
	_, base := baseModel(t)
	shard0 := base.Shards[0].File
	cases := []struct {
		name   string
		edit   func(m *Manifest)
		raw    string // used instead of edit when set
		file   string // FormatError.File
		field  string // substring of FormatError.Field
		offset int64
		cause  error
	}{
		{name: "version", edit: func(m *Manifest) { m.FormatVersion = 4 }, field: "format_version", offset: -1, cause: loader.ErrUnsupported},
		{name: "no arch", edit: func(m *Manifest) { m.Arch, m.Config.Arch = "", "" }, field: "arch", offset: -1, cause: loader.ErrCorrupt},
		{name: "arch mismatch", edit: func(m *Manifest) { m.Arch = "qwen3" }, field: "config.arch", offset: -1, cause: loader.ErrCorrupt},
		{name: "bad config", edit: func(m *Manifest) { m.Config.HeadDim = 7 }, field: "config.head_dim", offset: -1, cause: loader.ErrCorrupt},
		// The hardening report's repros: each passed before.
		{name: "layers 2^53", edit: func(m *Manifest) { m.Config.Layers = 1 << 53 }, field: "config.num_layers", offset: -1, cause: loader.ErrCorrupt},
		{name: "layers 1e7", edit: func(m *Manifest) { m.Config.Layers = 10_000_000 }, field: "config.num_layers", offset: -1, cause: loader.ErrCorrupt},
		{name: "rope theta -1", edit: func(m *Manifest) { m.Config.RopeTheta = -1 }, field: "config.rope_theta", offset: -1, cause: loader.ErrCorrupt},
		{name: "eps -1", edit: func(m *Manifest) { m.Config.RMSEps = -1 }, field: "config.rms_norm_eps", offset: -1, cause: loader.ErrCorrupt},
		{name: "max position -5", edit: func(m *Manifest) { m.Config.MaxContext = -5 }, field: "config.max_position_embeddings", offset: -1, cause: loader.ErrCorrupt},
		{name: "llama3 factor 0", edit: func(m *Manifest) {
			m.Config.RopeScaling = &model.RopeScaling{Type: "llama3", LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
		}, field: "config.rope_scaling.factor", offset: -1, cause: loader.ErrCorrupt},
		{name: "tokenizer array", edit: func(m *Manifest) { m.Tokenizer = []byte(`[1]`) }, field: "tokenizer", offset: -1, cause: loader.ErrCorrupt},
		{name: "dtype", edit: func(m *Manifest) { m.Tensors[1].DType = "f32" }, field: `tensors[1] "b" dtype`, offset: -1, cause: loader.ErrUnsupported},
		{name: "dtype unknown", edit: func(m *Manifest) { m.Tensors[1].DType = "Q9_9" }, field: "dtype", offset: -1, cause: loader.ErrUnsupported},
		{name: "bytes vs shape", edit: func(m *Manifest) { m.Tensors[0].Bytes = 404 }, field: `tensors[0] "a" bytes`, offset: -1, cause: loader.ErrCorrupt},
		{name: "zero dim", edit: func(m *Manifest) { m.Tensors[0].Shape = []int{0, 100} }, field: "shape", offset: -1, cause: loader.ErrCorrupt},
		{name: "negative dim", edit: func(m *Manifest) { m.Tensors[0].Shape = []int{-4, -25} }, field: "shape", offset: -1, cause: loader.ErrCorrupt},
		{name: "overflow dims", edit: func(m *Manifest) { m.Tensors[0].Shape = []int{1 << 31, 1 << 31, 1 << 31} }, field: "shape", offset: -1, cause: loader.ErrCorrupt},
		{name: "too many dims", edit: func(m *Manifest) { m.Tensors[0].Shape = []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 100} }, field: "shape", offset: -1, cause: loader.ErrCorrupt},
		{name: "q4 partial group", edit: func(m *Manifest) { m.Tensors[3].Shape = []int{16, 16} }, field: `"q" shape`, offset: -1, cause: loader.ErrCorrupt},
		{name: "shard index", edit: func(m *Manifest) { m.Tensors[2].Shard = 3 }, field: `tensors[2] "c" shard`, offset: -1, cause: loader.ErrCorrupt},
		{name: "negative shard", edit: func(m *Manifest) { m.Tensors[2].Shard = -1 }, field: "shard", offset: -1, cause: loader.ErrCorrupt},
		{name: "past shard end", edit: func(m *Manifest) { m.Tensors[1].Offset = 768 }, file: shard0, field: `tensor "b"`, offset: 768, cause: loader.ErrTruncated},
		{name: "huge offset", edit: func(m *Manifest) { m.Tensors[1].Offset = 1 << 62 }, file: shard0, field: `tensor "b"`, offset: 1 << 62, cause: loader.ErrTruncated},
		{name: "misaligned", edit: func(m *Manifest) { m.Tensors[1].Offset = 400 }, file: shard0, field: `tensor "b"`, offset: 400, cause: loader.ErrCorrupt},
		{name: "negative offset", edit: func(m *Manifest) { m.Tensors[1].Offset = -256 }, file: shard0, field: `tensor "b"`, offset: -256, cause: loader.ErrCorrupt},
		{name: "overlap", edit: func(m *Manifest) { m.Tensors[1].Offset = 256 }, file: shard0, field: `tensor "b"`, offset: 256, cause: loader.ErrCorrupt},
		{name: "duplicate name", edit: func(m *Manifest) { m.Tensors[2].Name = "a" }, field: `tensors[2] "a" name`, offset: -1, cause: loader.ErrCorrupt},
		{name: "empty name", edit: func(m *Manifest) { m.Tensors[2].Name = "" }, field: "name", offset: -1, cause: loader.ErrCorrupt},
		{name: "shard traversal", edit: func(m *Manifest) { m.Shards[0].File = "../" + m.Shards[0].File }, field: "shards[0].file", offset: -1, cause: loader.ErrCorrupt},
		{name: "shard unhashed", edit: func(m *Manifest) { m.Shards[0].File = "weights.bin" }, field: "shards[0].file", offset: -1, cause: loader.ErrCorrupt},
		{name: "name hash mismatch", edit: func(m *Manifest) { m.Shards[0].File = m.Shards[1].File }, field: "shards[0].file", offset: -1, cause: loader.ErrCorrupt},
		{name: "duplicate shard", edit: func(m *Manifest) { m.Shards[1] = m.Shards[0] }, field: "shards[1].file", offset: -1, cause: loader.ErrCorrupt},
		{name: "sha uppercase", edit: func(m *Manifest) { m.Shards[0].SHA256 = strings.ToUpper(m.Shards[0].SHA256) }, field: "shards[0].sha256", offset: -1, cause: loader.ErrCorrupt},
		{name: "negative shard bytes", edit: func(m *Manifest) { m.Shards[2].Bytes = -1 }, field: "shards[2].bytes", offset: -1, cause: loader.ErrCorrupt},
		{name: "syntax", raw: `{"format_version": 1, "shards": [}`, field: "json", offset: 34, cause: loader.ErrCorrupt},
		{name: "type", raw: `{"format_version": 1, "tensors": [{"shape": "x"}]}`, field: "tensors.0.shape", offset: 47, cause: loader.ErrCorrupt},
		{name: "fractional", raw: `{"format_version": 1.5}`, field: "format_version", offset: 22, cause: loader.ErrCorrupt},
		{name: "empty", raw: ``, field: "json", offset: 0, cause: loader.ErrCorrupt},
		{name: "oversized", raw: strings.Repeat(" ", MaxManifestBytes+1), field: "size", offset: MaxManifestBytes, cause: loader.ErrTooLarge},
	}
	// A tensor of 3000 bytes over shards of 1024: "a" in shard 0, then
	// "d" in parts of 1024, 1024 and 952 bytes in shards 1, 2 and 3.
	parts := writeModel(t, filepath.Join(t.TempDir(), "p"), 1024, f32Tensor("a", 1, 100), f32Tensor("d", 4, 750))
	if len(parts.Tensors[1].Parts) != 3 || len(parts.Shards) != 4 {
		t.Fatalf("the parts model: %+v", parts.Tensors[1])
	}
	for _, tc := range []struct {
		name, file, field string
		edit              func(m *Manifest)
		offset            int64
		cause             error
	}{
		{name: "parts in version 1", edit: func(m *Manifest) { m.FormatVersion = 1 }, field: `"d" parts`, offset: -1, cause: loader.ErrCorrupt},
		{name: "parts first", edit: func(m *Manifest) { m.Tensors[1].Offset = 256 }, field: `"d" parts[0]`, offset: -1, cause: loader.ErrCorrupt},
		{name: "parts order", edit: func(m *Manifest) { m.Tensors[1].Parts[2].Shard = 1 }, field: `"d" parts[2].shard`, offset: -1, cause: loader.ErrCorrupt},
		{name: "parts sum", edit: func(m *Manifest) { m.Tensors[1].Parts[2].Bytes = 900 }, field: `"d" parts`, offset: -1, cause: loader.ErrCorrupt},
		{name: "part not whole words", edit: func(m *Manifest) { m.Tensors[1].Parts[0].Bytes, m.Tensors[1].Parts[2].Bytes = 1022, 954 }, field: `"d" parts[0].bytes`, offset: -1, cause: loader.ErrCorrupt},
		{name: "part past shard end", edit: func(m *Manifest) { m.Tensors[1].Parts[1].Bytes, m.Tensors[1].Parts[2].Bytes = 976, 1000 }, file: parts.Shards[3].File, field: `tensor "d" part 2`, offset: 0, cause: loader.ErrTruncated},
		{name: "part overlap", edit: func(m *Manifest) { m.Tensors[0].Shard = 1 }, file: parts.Shards[1].File, field: `tensor "`, offset: 0, cause: loader.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := clone(t, parts)
			tc.edit(m)
			data, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			t.Log(checkParseError(t, data, tc.file, tc.field, tc.offset, tc.cause))
		})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.raw)
			if tc.edit != nil {
				m := clone(t, base)
				tc.edit(m)
				var err error
				if data, err = m.Encode(); err != nil {
					t.Fatal(err)
				}
			}
			err := checkParseError(t, data, tc.file, tc.field, tc.offset, tc.cause)
			if len(data) < 1000 || tc.edit != nil {
				t.Log(err)
			}
		})
	}
}

// checkParseError parses data and checks that the error is a FormatError
// naming file (manifest.json when empty), a field containing field, offset
// and cause; it returns the error.
func checkParseError(t *testing.T, data []byte, file, field string, offset int64, cause error) error {
	t.Helper()
	_, err := Parse(data)
	var fe *loader.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want a FormatError", err)
	}
	if file == "" {
		file = ManifestFile
	}
	if fe.File != file || !strings.Contains(fe.Field, field) || fe.Offset != offset || !errors.Is(err, cause) {
		t.Errorf("got %v\n(File %q Field %q Offset %d), want File %q, Field containing %q, Offset %d, cause %v",
			err, fe.File, fe.Field, fe.Offset, file, field, offset, cause)
	}
	return err
}

func clone(t *testing.T, m *Manifest) *Manifest {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var c Manifest
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestEncodeMatchesMarshal checks that Encode's hand-laid-out JSON holds the
// same keys and values as json.Marshal of the struct.
func TestEncodeMatchesMarshal(t *testing.T) {
	_, m := baseModel(t)
	m.Tokenizer = []byte(`{ "kind": "gguf", "tokens": ["<s>", "a&b"] }`)
	m.ChatTemplate = "{% for m in messages %}<|{{ m.role }}|>{% endfor %}"
	enc, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	std, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(enc, &a); err != nil {
		t.Fatalf("Encode output is not JSON: %v\n%s", err, enc)
	}
	json.Unmarshal(std, &b)
	if d := cmp.Diff(b, a); d != "" {
		t.Fatalf("Encode differs from json.Marshal (-marshal +encode):\n%s", d)
	}
	if !strings.Contains(string(enc), "<|{{ m.role }}|>") {
		t.Error("chat template is HTML-escaped")
	}
	if got := strings.Count(string(enc), "\n"); got < len(m.Tensors)+len(m.Shards) {
		t.Errorf("%d lines for %d tensors", got, len(m.Tensors))
	}
}

// TestOpenVerifiesShards flips one byte, truncates, grows and removes shards:
// Open must name the shard.
func TestOpenVerifiesShards(t *testing.T) {
	cases := []struct {
		name  string
		shard int
		edit  func(data []byte) []byte
		cause error
	}{
		{"flipped byte", 1, func(d []byte) []byte { d[123] ^= 0x10; return d }, ErrChecksum},
		{"flipped padding", 0, func(d []byte) []byte { d[450] = 1; return d }, ErrChecksum},
		{"truncated", 2, func(d []byte) []byte { return d[:len(d)-1] }, loader.ErrTruncated},
		{"grown", 2, func(d []byte) []byte { return append(d, 0) }, loader.ErrCorrupt},
		{"missing", 1, nil, os.ErrNotExist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, m := baseModel(t)
			path := filepath.Join(dir, m.Shards[tc.shard].File)
			if tc.edit == nil {
				os.Remove(path)
			} else {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, tc.edit(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := Read(dir); err != nil {
				t.Fatalf("Read looks at shards: %v", err)
			}
			_, err := Open(dir)
			var fe *loader.FormatError
			if !errors.As(err, &fe) || fe.File != path || !errors.Is(err, tc.cause) {
				t.Fatalf("got %v, want a FormatError on %s wrapping %v", err, path, tc.cause)
			}
			t.Log(err)
		})
	}
}

func TestReaderTensor(t *testing.T) {
	dir, m := baseModel(t)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Manifest().TotalBytes() != m.TotalBytes() {
		t.Fatal("manifest differs")
	}
	got, err := r.Tensor("c")
	if err != nil {
		t.Fatal(err)
	}
	if want := f32Tensor("c", 3, 200); !cmp.Equal(got, want) {
		t.Fatalf("tensor c differs")
	}
	if _, err := r.Tensor("nope"); !errors.Is(err, loader.ErrNotFound) {
		t.Fatalf("missing tensor: %v", err)
	}

	// The same folder through fs.FS, as a browser-side cache could provide it.
	mapfs := fstest.MapFS{}
	for _, name := range listDir(t, dir) {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		mapfs[name] = &fstest.MapFile{Data: data}
	}
	r2, err := OpenFS(mapfs)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range m.Tensors {
		a, err := r.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := r2.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(a, b, cmpopts.EquateEmpty()) {
			t.Fatalf("%s differs between Open and OpenFS", ti.Name)
		}
	}
	// A shard that shrinks after verification gives an error, not short data.
	c, _ := m.Lookup("c")
	mapfs[m.Shards[c.Shard].File].Data = mapfs[m.Shards[c.Shard].File].Data[:10]
	if _, err := r2.Tensor("c"); !errors.Is(err, loader.ErrTruncated) {
		t.Fatalf("shrunk shard: %v", err)
	}
}

func TestNames(t *testing.T) {
	sum := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if got := ShardName(7, sum); got != "shard-00007-0123456789abcdef.bin" || !IsHashedName(got) {
		t.Fatalf("ShardName: %q", got)
	}
	for name, want := range map[string]bool{
		"x-0123456789abcdef.bin":      true,
		"model.layer-" + sum + ".bin": true,
		"x-0123456789abcde.bin":       false, // 15 digits
		"x-" + sum + "0.bin":          false, // 65
		"x-0123456789ABCDEF.bin":      false,
		"-0123456789abcdef.bin":       false,
		".x-0123456789abcdef.bin":     false,
		"a/x-0123456789abcdef.bin":    false,
		"x-0123456789abcdef.bin.gz":   false,
		"x_0123456789abcdef.bin":      false,
		"x-0123456789abcdeg.bin":      false,
		"x-0123456789abcdef\x00.bin":  false,
		"manifest.json":               false,
	} {
		if IsHashedName(name) != want {
			t.Errorf("IsHashedName(%q) = %v", name, !want)
		}
	}
}
