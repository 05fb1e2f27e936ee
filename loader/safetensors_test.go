package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const hfDir = "../testdata/hf/"

// f32GGUF is the F32 GGUF of tiny model m: its F32 original, or for
// tiny-qwen3moe the committed q8_0 file dequantised (the F32 original is in
// ../shared, read by make test-extended).
func f32GGUF(m string) string {
	if m == "tiny-qwen3moe" {
		return "tiny-qwen3moe-dq8.gguf"
	}
	return m + "-f32.gguf"
}

// TestSafetensorsMatchesGGUF opens each HF folder and compares every tensor
// byte for byte with the F32 GGUF made from the same weights: same shape and
// data, except Llama's Q/K rows, which llama.cpp permutes; experts are
// compared with their slice of GGUF's merged expert tensors.
func TestSafetensorsMatchesGGUF(t *testing.T) {
	heads := map[string][2]int{"tiny-llama3": {8, 2}}
	expert := regexp.MustCompile(`^model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight$`)
	for _, model := range []string{"tiny-llama3", "tiny-qwen3", "tiny-qwen3moe"} {
		st, err := OpenSafetensors(hfDir + model)
		if err != nil {
			t.Fatal(err)
		}
		g, err := ReadGGUF(modelsDir + f32GGUF(model))
		if err != nil {
			t.Fatal(err)
		}
		matched := 0
		for _, name := range st.Names() {
			hf, err := st.Tensor(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := hf.CheckSize(); err != nil || hf.DType != F32 {
				t.Fatalf("%s %s: %v %s", model, name, err, hf.DType)
			}
			if m := expert.FindStringSubmatch(name); m != nil {
				merged, err := g.Tensor(fmt.Sprintf("blk.%s.ffn_%s_exps.weight", m[1], m[3]))
				if err != nil {
					t.Fatal(err)
				}
				e, _ := strconv.Atoi(m[2])
				if !cmp.Equal(merged.Shape[1:], hf.Shape) || !bytes.Equal(merged.Data[e*len(hf.Data):(e+1)*len(hf.Data)], hf.Data) {
					t.Errorf("%s %s differs from expert %d of %s", model, name, e, merged.Name)
				}
				matched++
				continue
			}
			gname, ok := ggufName(name)
			if !ok {
				t.Fatalf("%s: unexpected tensor %s", model, name)
			}
			want, err := g.Tensor(gname)
			if err != nil {
				t.Fatal(err)
			}
			data := hf.Data
			if h, ok := heads[model]; ok && (strings.HasSuffix(gname, "attn_q.weight") || strings.HasSuffix(gname, "attn_k.weight")) {
				n := h[0]
				if strings.HasSuffix(gname, "attn_k.weight") {
					n = h[1]
				}
				data = permuteQK(data, hf.Rows(), hf.Cols()*4, n)
				if bytes.Equal(data, hf.Data) {
					t.Fatalf("%s: permutation is the identity", name)
				}
			}
			if !cmp.Equal(want.Shape, hf.Shape) || !bytes.Equal(want.Data, data) {
				t.Errorf("%s %s %v differs from GGUF %s %v", model, name, hf.Shape, gname, want.Shape)
			}
			matched++
		}
		if matched != len(st.Tensors) || matched < 20 {
			t.Errorf("%s: matched %d of %d tensors", model, matched, len(st.Tensors))
		}
		t.Logf("%s: %d tensors in %d file(s) match the GGUF", model, matched, len(st.files))
		if err := st.Close(); err != nil {
			t.Error(err)
		}
		if _, err := st.Tensor(st.Tensors[0].Name); !errors.Is(err, os.ErrClosed) {
			t.Errorf("Tensor after Close: %v", err)
		}
	}
}

func TestOpenSafetensorsPaths(t *testing.T) {
	st, err := OpenSafetensors(hfDir + "tiny-llama3")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if len(st.files) != 2 || !st.Has("lm_head.weight") || st.Has("nope") {
		t.Errorf("sharded: %d files", len(st.files))
	}
	for _, ti := range st.Tensors {
		if ti.Name == "model.norm.weight" && !strings.HasSuffix(ti.File, "model-00002-of-00002.safetensors") {
			t.Errorf("model.norm.weight in %s", ti.File)
		}
	}
	if _, err := st.Tensor("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Tensor(nope): %v", err)
	}
	one, err := OpenSafetensors(hfDir + "tiny-qwen3/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	emb, err := one.Tensor("model.embed_tokens.weight")
	if err != nil || !cmp.Equal(emb.Shape, []int{512, 128}) {
		t.Errorf("embed: %v %v", emb, err)
	}
	if _, err := OpenSafetensors(t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Errorf("empty folder: %v", err)
	}
	if _, err := OpenSafetensors(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
}

// stFile builds a safetensors file from a header and a data section.
func stFile(header string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSafetensorsHandMade(t *testing.T) {
	data := make([]byte, 24)
	copy(data, []byte{0, 0, 0x80, 0x3f, 0, 0x3c, 0x80, 0x3f})
	hdr := `{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},` +
		`"h":{"dtype":"F16","shape":[1,1],"data_offsets":[4,6]},"b":{"dtype":"BF16","shape":[],"data_offsets":[6,8]},` +
		`"z":{"dtype":"F32","shape":[0,5],"data_offsets":[8,8]},"c":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]}}   `
	p := writeFile(t, t.TempDir(), "m.safetensors", stFile(hdr, data))
	st, err := OpenSafetensors(p)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Metadata["format"] != "pt" || len(st.Tensors) != 5 {
		t.Fatalf("metadata %v, %d tensors", st.Metadata, len(st.Tensors))
	}
	for name, want := range map[string]float32{"a": 1, "h": 1, "b": 1} {
		tt, err := st.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		x, err := tt.F32()
		if err != nil || len(x) != 1 || x[0] != want {
			t.Errorf("%s = %v %v", name, x, err)
		}
	}
	z, _ := st.Tensor("z")
	if !cmp.Equal(z.Shape, []int{0, 5}) || len(z.Data) != 0 {
		t.Errorf("z: %v", z)
	}
}

func TestSafetensorsErrors(t *testing.T) {
	ok := `"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`
	data8 := make([]byte, 8)
	for _, c := range []struct {
		name   string
		file   []byte
		field  string
		offset int64
		cause  error
	}{
		{"empty", nil, "header length", 0, ErrTruncated},
		{"7 bytes", make([]byte, 7), "header length", 0, ErrTruncated},
		{"header past end", binary.LittleEndian.AppendUint64(nil, 100), "header length", 0, ErrTruncated},
		{"absurd header", binary.LittleEndian.AppendUint64(nil, 1<<62), "header length", 0, ErrTooLarge},
		{"not json", stFile(`{"a":`, nil), "tensor a", 9, ErrCorrupt},
		{"bad key", stFile(`{1:2}`, nil), "header", 10, ErrCorrupt}, // json reports the byte after the bad one
		{"not an object", stFile(`[1,2]`, nil), "header", 8, ErrCorrupt},
		{"trailing data", stFile(`{}x`, nil), "header", 10, ErrCorrupt},
		{"two objects", stFile(`{} {}`, nil), "header", 10, ErrCorrupt},
		{"unsupported dtype", stFile(`{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, data8), "tensor a dtype", 9, ErrUnsupported},
		{"unknown dtype", stFile(`{"a":{"dtype":"Q9","shape":[1],"data_offsets":[0,8]}}`, data8), "tensor a dtype", 9, ErrUnsupported},
		{"missing dtype", stFile(`{"a":{"shape":[1],"data_offsets":[0,4]}}`, data8), "tensor a dtype", 9, ErrCorrupt},
		{"missing shape", stFile(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, data8), "tensor a shape", 9, ErrCorrupt},
		{"negative dim", stFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, data8), "tensor a", 9, ErrCorrupt},
		{"fractional dim", stFile(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, data8), "tensor a", 9, ErrCorrupt},
		{"absurd dims", stFile(`{"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}}`, data8), "tensor a shape", 9, ErrTooLarge},
		{"one offset", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, data8), "tensor a data_offsets", 9, ErrCorrupt},
		{"offsets past end", stFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, data8), "tensor a data_offsets", 9, ErrTruncated},
		{"huge offsets", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551615]}}`, data8), "tensor a data_offsets", 9, ErrTruncated},
		{"begin after end", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}`, data8), "tensor a data_offsets", 9, ErrTruncated},
		{"size mismatch", stFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, data8), "tensor a data_offsets", 9, ErrCorrupt},
		{"bf16 size mismatch", stFile(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,8]}}`, data8), "tensor a data_offsets", 9, ErrCorrupt},
		{"overlap", stFile(`{`+ok+`,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data8), "tensor b data_offsets", 62, ErrCorrupt},
		{"duplicate", stFile(`{`+ok+`,`+ok+`}`, data8), "tensor a", 62, ErrCorrupt},
		{"metadata not strings", stFile(`{"__metadata__":{"n":1}}`, nil), "__metadata__", 9, ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "x.safetensors", c.file)
			_, err := OpenSafetensors(p)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *FormatError", err)
			}
			if fe.File != p || fe.Field != c.field || !errors.Is(err, c.cause) || fe.Offset != c.offset {
				t.Fatalf("got %q (offset %d), want field %q offset %d cause %v", err, fe.Offset, c.field, c.offset, c.cause)
			}
			if _, _, err := parseSafetensors(p, bytes.NewReader(c.file), int64(len(c.file))); err == nil {
				t.Fatal("parseSafetensors accepts it")
			}
		})
	}
}

func TestSafetensorsShardErrors(t *testing.T) {
	one := func(name string) []byte {
		return stFile(`{"`+name+`":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4))
	}
	for _, c := range []struct {
		name  string
		index string
		files map[string][]byte
		field string
		cause error
	}{
		{"bad json", `{"weight_map":`, nil, "index", ErrCorrupt},
		{"no tensors", `{"weight_map":{}}`, nil, "weight_map", ErrCorrupt},
		{"path escape", `{"weight_map":{"a":"../a.safetensors"}}`, nil, "weight_map a", ErrCorrupt},
		{"absolute path", `{"weight_map":{"a":"/tmp/a.safetensors"}}`, nil, "weight_map a", ErrCorrupt},
		{"tensor not in shard", `{"weight_map":{"a":"s1.safetensors","b":"s1.safetensors"}}`,
			map[string][]byte{"s1.safetensors": one("a")}, "weight_map b", ErrNotFound},
		{"tensor in wrong shard", `{"weight_map":{"a":"s2.safetensors","b":"s2.safetensors"}}`,
			map[string][]byte{"s1.safetensors": one("a"), "s2.safetensors": one("b")}, "weight_map a", ErrNotFound},
		{"tensor in two shards", `{"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}}`,
			map[string][]byte{"s1.safetensors": one("a"), "s2.safetensors": one("a")}, "tensor a", ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "model.safetensors.index.json", []byte(c.index))
			for n, d := range c.files {
				writeFile(t, dir, n, d)
			}
			_, err := OpenSafetensors(dir)
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, c.cause) {
				t.Fatalf("got %v, want field %q cause %v", err, c.field, c.cause)
			}
		})
	}
	dir := t.TempDir()
	writeFile(t, dir, "model.safetensors.index.json", []byte(`{"weight_map":{"a":"gone.safetensors"}}`))
	if _, err := OpenSafetensors(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing shard: %v", err)
	}
}

// TestSafetensorsShrunk: a file truncated after it was opened gives a typed
// error when the tensor is read.
func TestSafetensorsShrunk(t *testing.T) {
	hdr := `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`
	p := writeFile(t, t.TempDir(), "m.safetensors", stFile(hdr, make([]byte, 16)))
	st, err := OpenSafetensors(p)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := os.Truncate(p, int64(8+len(hdr)+10)); err != nil {
		t.Fatal(err)
	}
	_, err = st.Tensor("a")
	var fe *FormatError
	if !errors.As(err, &fe) || !errors.Is(err, ErrTruncated) || fe.Offset != int64(8+len(hdr)+10) {
		t.Fatalf("got %v", err)
	}
}
