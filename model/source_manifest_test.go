package model_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"wasmllm/internal/testkit/golden"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/source"
)

// writeFolder writes w as a converted folder without cmd/convert: Q4_0 and
// Q8_0 tensors repacked as q4 and q8, the rest as they are, in shards of
// shardBytes.
func writeFolder(t *testing.T, w *model.Weights, shardBytes int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	wr, err := manifest.NewWriter(dir, shardBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer wr.Abort()
	for _, name := range w.Config.TensorNames() {
		x, ok := w.Tensors[name]
		if !ok {
			continue
		}
		if x.DType == loader.Q4_0 || x.DType == loader.Q8_0 {
			if x, err = loader.ToPlanar(x); err != nil {
				t.Fatal(err)
			}
		}
		if err := wr.Add(x); err != nil {
			t.Fatal(err)
		}
	}
	if err := wr.Close(&manifest.Manifest{Arch: w.Config.Arch, Config: w.Config}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestManifestGoldens writes GGUF models as converted folders split into
// many shards, loads them with source.Weights and checks the exact goldens.
func TestManifestGoldens(t *testing.T) {
	for _, name := range []string{"tiny-llama3-q4_0", "tiny-qwen3-q8_0", "tiny-qwen3moe-q8_0"} {
		t.Run(name, func(t *testing.T) {
			src := loadWeights(t, "../testdata/models/"+name+".gguf")
			dir := writeFolder(t, src, 64<<10)
			m, err := manifest.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Shards) < 3 {
				t.Fatalf("only %d shards", len(m.Shards))
			}
			w, err := source.Weights(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Tensors) != len(src.Tensors) {
				t.Fatalf("%d tensors, source %d", len(w.Tensors), len(src.Tensors))
			}
			mod, err := model.Build(cpu.New(0), w)
			if err != nil {
				t.Fatal(err)
			}
			g := golden.Read(t, "../testdata/golden/"+name+".golden")
			checkGolden(t, mod, g, g.Tolerance)
		})
	}
}

func TestTensorNames(t *testing.T) {
	for _, name := range []string{"stories260K", "tiny-llama3-f32", "tiny-qwen3-f32", "tiny-qwen3moe-dq8"} {
		w := loadWeights(t, "../testdata/models/"+name+".gguf")
		names := w.Config.TensorNames()
		for n := range w.Tensors {
			if !slices.Contains(names, n) {
				t.Errorf("%s: %s is not in TensorNames", name, n)
			}
		}
		for _, n := range names {
			if _, ok := w.Tensors[n]; !ok && n != model.NameRopeFreqs {
				t.Errorf("%s: TensorNames lists %s, which the model lacks", name, n)
			}
		}
		if names[0] != model.NameEmbed || !strings.HasPrefix(names[len(names)-1], "output") {
			t.Errorf("%s: order %v", name, names)
		}
	}
}

type mapReader map[string]*loader.Tensor

func (m mapReader) Tensor(name string) (*loader.Tensor, error) {
	t, ok := m[name]
	if !ok {
		return nil, &loader.FormatError{File: "map", Field: "tensor " + name, Offset: -1, Err: loader.ErrNotFound}
	}
	return t, nil
}

func TestFromCanonicalErrors(t *testing.T) {
	w := loadWeights(t, "../testdata/models/tiny-qwen3-f32.gguf")
	r := mapReader(w.Tensors)
	names := w.Names()
	if _, err := model.FromCanonical("x", w.Config, names, r); err != nil {
		t.Fatalf("all canonical tensors: %v", err)
	}
	cases := []struct {
		name  string
		names []string
		edit  func(mapReader)
		want  error
	}{
		{"unknown name", append(slices.Clone(names), "blk.0.attn_q.weight"), func(m mapReader) {
			m["blk.0.attn_q.weight"] = m["blk.0.attn_output.weight"]
		}, loader.ErrUnsupported},
		{"layer past the config", append(slices.Clone(names), "blk.9.attn_norm.weight"), func(m mapReader) {
			m["blk.9.attn_norm.weight"] = m["blk.0.attn_norm.weight"]
		}, loader.ErrUnsupported},
		{"missing tensor", slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == "blk.2.ffn_down.weight" }), nil, loader.ErrNotFound},
		{"wrong shape", names, func(m mapReader) {
			x := *m["blk.1.attn_output.weight"]
			x.Shape = []int{x.Shape[0] * 2, x.Shape[1] / 2}
			m["blk.1.attn_output.weight"] = &x
		}, loader.ErrCorrupt},
	}
	for _, c := range cases {
		m := mapReader{}
		for k, v := range r {
			m[k] = v
		}
		if c.edit != nil {
			c.edit(m)
		}
		_, err := model.FromCanonical("x", w.Config, c.names, m)
		var fe *loader.FormatError
		if !errors.Is(err, c.want) || !errors.As(err, &fe) {
			t.Errorf("%s: got %v, want a FormatError wrapping %v", c.name, err, c.want)
		}
	}
}

// TestLoadManifestErrors: a shard with one flipped byte, and a manifest
// naming a tensor the model does not have.
func TestLoadManifestErrors(t *testing.T) {
	w := loadWeights(t, "../testdata/models/tiny-llama3-q4_0.gguf")
	dir := writeFolder(t, w, 256<<10)
	m, err := manifest.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(dir, m.Shards[1].File)
	data, _ := os.ReadFile(shard)
	data[len(data)/2] ^= 1
	os.WriteFile(shard, data, 0o644)
	_, err = source.Weights(dir)
	var fe *loader.FormatError
	if !errors.Is(err, manifest.ErrChecksum) || !errors.As(err, &fe) || fe.File != shard {
		t.Errorf("flipped byte: got %v, want a checksum error naming %s", err, shard)
	}

	w.Tensors["blk.0.attn_q.weight"] = w.Tensors["blk.0.attn_output.weight"]
	dir = filepath.Join(t.TempDir(), "extra")
	wr, _ := manifest.NewWriter(dir, 0)
	for _, name := range w.Names() {
		x := *w.Tensors[name]
		x.Name = name
		if err := wr.Add(&x); err != nil {
			t.Fatal(err)
		}
	}
	if err := wr.Close(&manifest.Manifest{Arch: w.Config.Arch, Config: w.Config}); err != nil {
		t.Fatal(err)
	}
	if _, err := source.Weights(dir); !errors.Is(err, loader.ErrUnsupported) || !strings.Contains(err.Error(), "blk.0.attn_q.weight") {
		t.Errorf("extra tensor: got %v", err)
	}
}

func TestParseTokenizerSpec(t *testing.T) {
	h := func(names ...string) string {
		var kv []string
		for i, n := range names {
			kv = append(kv, fmt.Sprintf("%q:%q", n, strings.Repeat(fmt.Sprint(i), 64)))
		}
		return `"sha256":{` + strings.Join(kv, ",") + "}"
	}
	good := map[string]model.TokenizerSpec{
		``:     {},
		`null`: {},
		`{"format":"hf","files":["tokenizer.json","tokenizer_config.json","chat_template.jinja"],` + h("tokenizer.json", "tokenizer_config.json", "chat_template.jinja") + `}`: {Format: "hf", Files: []string{"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}},
		`{"format":"gguf","file":"tokenizer.gguf",` + h("tokenizer.gguf") + `}`:                                                                                                {Format: "gguf", File: "tokenizer.gguf"},
		` {"format":"llama2c","file":"tok512.bin",` + h("tok512.bin") + `} `:                                                                                                   {Format: "llama2c", File: "tok512.bin"},
	}
	for in, want := range good {
		s, err := model.ParseTokenizerSpec("manifest.json", json.RawMessage(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if s == nil {
			s = &model.TokenizerSpec{}
		}
		if s.Format != want.Format || s.File != want.File || !slices.Equal(s.Files, want.Files) {
			t.Errorf("%s: got %+v, want %+v", in, *s, want)
		}
	}
	bad := []string{
		`[]`, `"hf"`, `{}`, `{"format":"sentencepiece","file":"x.model"}`,
		`{"format":"hf"}`, `{"format":"hf","files":["tokenizer_config.json"]}`,
		`{"format":"hf","files":["tokenizer.json","tokenizer.json"]}`,
		`{"format":"hf","files":["tokenizer.json","../secrets.json"]}`,
		`{"format":"hf","file":"tokenizer.json","files":["tokenizer.json"]}`,
		`{"format":"gguf","file":"../../etc/passwd"}`, `{"format":"gguf","file":"/etc/passwd"}`,
		`{"format":"gguf","file":"a\\b"}`, `{"format":"gguf","file":".."}`, `{"format":"gguf","file":""}`,
		`{"format":"gguf","file":"C:x"}`, `{"format":"llama2c","files":["tokenizer.bin"]}`,
		`{"format":"gguf","file":"t.gguf","kind":"gguf"}`, `{"format":"gguf","file":"t.gguf"} {}`,
		// tokenizer files without their sha256 (issue: they were cached on any 2xx)
		`{"format":"gguf","file":"tokenizer.gguf"}`,
		`{"format":"gguf","file":"tokenizer.gguf","sha256":{"tokenizer.gguf":"` + strings.Repeat("A", 64) + `"}}`,
		`{"format":"gguf","file":"tokenizer.gguf","sha256":{"tokenizer.gguf":"abc"}}`,
		`{"format":"gguf","file":"tokenizer.gguf",` + h("tokenizer.gguf", "other.bin") + `}`,
		`{"format":"hf","files":["tokenizer.json","tokenizer_config.json"],` + h("tokenizer.json") + `}`,
	}
	for _, in := range bad {
		_, err := model.ParseTokenizerSpec("manifest.json", json.RawMessage(in))
		var fe *loader.FormatError
		if !errors.As(err, &fe) || fe.File != "manifest.json" {
			t.Errorf("%s: got %v, want a FormatError", in, err)
		}
	}
}

// FuzzParseTokenizerSpec: no panics, and an accepted spec only names plain
// files inside the model folder.
func FuzzParseTokenizerSpec(f *testing.F) {
	for _, s := range []string{
		`{"format":"hf","files":["tokenizer.json","tokenizer_config.json"]}`,
		`{"format":"gguf","file":"tokenizer.gguf","sha256":{"tokenizer.gguf":"` + strings.Repeat("0", 64) + `"}}`,
		`{"format":"gguf","file":"tokenizer.gguf"}`,
		`{"format":"llama2c","file":"tokenizer.bin"}`,
		`{"format":"gguf","file":"../x"}`, `null`, `{"format":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := model.ParseTokenizerSpec("manifest.json", data)
		if err != nil || s == nil {
			return
		}
		files := append([]string{s.File}, s.Files...)
		for _, name := range files {
			if name == "" {
				continue
			}
			if !filepath.IsLocal(name) || filepath.Base(name) != name || strings.ContainsAny(name, `/\`) {
				t.Fatalf("accepted file name %q", name)
			}
		}
		switch s.Format {
		case model.TokenizerHF, model.TokenizerGGUF, model.TokenizerLlama2C:
		default:
			t.Fatalf("accepted format %q", s.Format)
		}
	})
}
