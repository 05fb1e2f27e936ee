package api

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/internal/testkit/browsertest"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/wasm/loading"
)

var convertMu sync.Mutex

// converted returns a model folder converted from a test GGUF, once per
// test binary.
var convertedDirs = map[string]string{}

func converted(t testing.TB, gguf string) string {
	t.Helper()
	convertMu.Lock()
	defer convertMu.Unlock()
	if d, ok := convertedDirs[gguf]; ok {
		return d
	}
	dir, err := os.MkdirTemp("", "wasmllm-api-test-")
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, "model")
	// Small shards, so a model spans several.
	o := browsertest.ConvertOptions{ShardMB: 1}
	if strings.HasPrefix(gguf, "tiny-qwen3") {
		o.Tokenizer = browsertest.ChatTokenizer(t, "tiny-qwen3")
	}
	browsertest.Convert(t, browsertest.RepoFile("testdata/models/"+gguf), d, o)
	convertedDirs[gguf] = d
	return d
}

// convertedWith returns a model folder converted from a test GGUF with
// the tokenizer of testdata/hf/HF and a chat template: "qwen3" or
// "llama3_2" (the test tokenizers' templates), or a template's text.
func convertedWith(t *testing.T, gguf, hf, template string) string {
	t.Helper()
	convertMu.Lock()
	defer convertMu.Unlock()
	key := gguf + "\x00" + template
	if d, ok := convertedDirs[key]; ok {
		return d
	}
	text := template
	if template == "qwen3" || template == "llama3_2" {
		text = browsertest.ChatTemplateOf(t, template)
	}
	dir, err := os.MkdirTemp("", "wasmllm-api-test-")
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, "model")
	browsertest.Convert(t, browsertest.RepoFile("testdata/models/"+gguf), d,
		browsertest.ConvertOptions{Tokenizer: browsertest.ChatTokenizerWith(t, hf, text)})
	convertedDirs[key] = d
	return d
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range convertedDirs {
		os.RemoveAll(filepath.Dir(d))
	}
	os.Exit(code)
}

// loadDir loads a model folder the way the browser does (manifest, checks,
// tokenizer files, shards through an Assembler) onto the CPU backend.
func loadDir(t testing.TB, dir string, context int) (*engine.Engine, *manifest.Manifest) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, manifest.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := loading.Check(m, loading.Limits{Backend: loading.BackendCPU}, context)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := loading.TokenizerFiles(m)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, n := range spec.Names() {
		if files[n], err = os.ReadFile(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := loading.BuildTokenizer(m, files)
	if err != nil {
		t.Fatal(err)
	}
	a := loading.NewAssembler(m, dir)
	for i := len(m.Shards) - 1; i >= 0; i-- { // any order works
		shard, err := os.ReadFile(filepath.Join(dir, m.Shards[i].File))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.AddShard(i, int64(len(shard)), func(dst []byte, off int64) { copy(dst, shard[off:]) }); err != nil {
			t.Fatal(err)
		}
	}
	w, err := a.Weights()
	if err != nil {
		t.Fatal(err)
	}
	mdl, err := model.Build(cpu.New(1), w)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(mdl, tok, engine.Options{Context: plan.Context})
	if err != nil {
		t.Fatal(err)
	}
	return e, m
}

func greedyParams(n int) sampler.Params {
	p := sampler.DefaultParams()
	p.Temperature, p.MaxTokens = 0, n
	return p
}
