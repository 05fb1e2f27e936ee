package browsertest

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
)

// ConvertOptions configure ConvertGGUF.
type ConvertOptions struct {
	// ShardBytes bounds the shard size (0: manifest.DefaultShardBytes).
	ShardBytes int64
	// ChatTemplate replaces the GGUF's chat template (the test GGUFs have
	// none).
	ChatTemplate string
}

// ConvertGGUF writes a servable model folder at dst from the GGUF file src:
// the canonical tensors (model.FromGGUF), Q4_0 and Q8_0 repacked into the
// planar q4/q8 layouts, and the GGUF's tokenizer inlined in the manifest as
// {"kind": "gguf", "tokenizer.ggml.*": ...}. It stands in for cmd/convert
// in tests.
func ConvertGGUF(t testing.TB, src, dst string, o ConvertOptions) *manifest.Manifest {
	t.Helper()
	m, err := convertGGUF(src, dst, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Qwen3ChatTemplate returns the Qwen3 chat template (with its
// enable_thinking switch) from the test tokenizer files.
func Qwen3ChatTemplate(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(RepoFile("testdata/tokenizer/qwen3/tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil || cfg.ChatTemplate == "" {
		t.Fatalf("qwen3 tokenizer_config.json: no chat_template (%v)", err)
	}
	return cfg.ChatTemplate
}

func convertGGUF(src, dst string, o ConvertOptions) (*manifest.Manifest, error) {
	g, err := loader.ReadGGUF(src)
	if err != nil {
		return nil, err
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		return nil, err
	}
	tok := map[string]any{"kind": "gguf"}
	for _, kv := range g.MetaKVs() {
		if strings.HasPrefix(kv.Key, "tokenizer.ggml.") {
			tok[kv.Key] = kv.Value
		}
	}
	tokJSON, err := json.Marshal(tok)
	if err != nil {
		return nil, err
	}
	tmpl, _ := g.String("tokenizer.chat_template")
	if o.ChatTemplate != "" {
		tmpl = o.ChatTemplate
	}
	mw, err := manifest.NewWriter(dst, o.ShardBytes)
	if err != nil {
		return nil, err
	}
	defer mw.Abort()
	for _, name := range w.Names() {
		x := w.Tensors[name]
		if x.DType == loader.Q4_0 || x.DType == loader.Q8_0 {
			if x, err = loader.ToPlanar(x); err != nil {
				return nil, err
			}
		}
		if err := mw.Add(x); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	m := &manifest.Manifest{Arch: w.Config.Arch, Config: w.Config, Quant: "keep", Tokenizer: tokJSON, ChatTemplate: tmpl}
	if err := mw.Close(m); err != nil {
		return nil, err
	}
	return m, nil
}
