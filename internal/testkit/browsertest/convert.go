package browsertest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"wasmllm/manifest"
)

var convertBuild built

// ConvertOptions configure Convert; zero values are cmd/convert's defaults.
type ConvertOptions struct {
	ShardMB   float64 // -shard-mb (MiB; a fraction is allowed)
	Quant     string  // -quant: keep, q4, q8 or f16
	Tokenizer string  // -tokenizer: a tokenizer.json folder, GGUF or tokenizer.bin
}

// Convert runs cmd/convert on src (a GGUF file, a Hugging Face folder or a
// llama2.c checkpoint) into the model folder dst and returns its manifest.
func Convert(t testing.TB, src, dst string, o ConvertOptions) *manifest.Manifest {
	t.Helper()
	bin, err := build(&convertBuild, "convert", "./cmd/convert")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-o", dst, "-progress=false"}
	if o.ShardMB > 0 {
		args = append(args, "-shard-mb", strconv.FormatFloat(o.ShardMB, 'g', -1, 64))
	}
	if o.Quant != "" {
		args = append(args, "-quant", o.Quant)
	}
	if o.Tokenizer != "" {
		args = append(args, "-tokenizer", o.Tokenizer)
	}
	cmd := exec.Command(bin, append(args, src)...)
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("convert %s: %v\n%s", src, err, out)
	}
	m, err := manifest.Read(dst)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Qwen3ChatTemplate returns the Qwen3 chat template (with its
// enable_thinking switch) from the test tokenizer files.
func Qwen3ChatTemplate(t testing.TB) string {
	t.Helper()
	return ChatTemplateOf(t, "qwen3")
}

// ChatTemplateOf returns the chat template of the test tokenizer
// testdata/tokenizer/NAME (qwen3, llama3_2: Llama 3.2's, which teaches the
// Llama 3 JSON tool-call syntax), from its tokenizer_config.json, or its
// chat_template.jinja where that is all the folder has (llama3_1:
// Llama-3.1-8B-Instruct's own).
func ChatTemplateOf(t testing.TB, name string) string {
	t.Helper()
	if b, err := os.ReadFile(RepoFile(filepath.Join("testdata/tokenizer", name, "chat_template.jinja"))); err == nil {
		return string(b)
	}
	data, err := os.ReadFile(RepoFile(filepath.Join("testdata/tokenizer", name, "tokenizer_config.json")))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil || cfg.ChatTemplate == "" {
		t.Fatalf("%s tokenizer_config.json: no chat_template (%v)", name, err)
	}
	return cfg.ChatTemplate
}

// ChatTokenizer returns a tokenizer folder for Convert's -tokenizer: the
// Hugging Face tokenizer of testdata/hf/NAME with the Qwen3 chat template as
// chat_template.jinja (the test models have no template of their own).
func ChatTokenizer(t testing.TB, name string) string {
	t.Helper()
	return ChatTokenizerWith(t, name, Qwen3ChatTemplate(t))
}

// ChatTokenizerWith is ChatTokenizer with the chat template given, such
// as ChatTemplateOf(t, "llama3_2").
func ChatTokenizerWith(t testing.TB, name, template string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(RepoFile(filepath.Join("testdata/hf", name, f)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ShardPath returns the path of a model folder's shard i.
func ShardPath(dir string, m *manifest.Manifest, i int) string {
	if i < 0 || i >= len(m.Shards) {
		panic(fmt.Sprintf("browsertest: shard %d of %d", i, len(m.Shards)))
	}
	return filepath.Join(dir, m.Shards[i].File)
}
