//go:build !js

package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/golden"
	"wasmllm/internal/testkit/shareddata"
	"wasmllm/source"
	"wasmllm/tokenizer"
)

// phi3Browser converts each golden's model, then generates its greedy
// continuation of the prompt ids through the worker, on WebGPU and on the
// CPU backend (the wasm SIMD128 kernels), in b: the text must be the
// golden greedy ids' (Hugging Face's factor choice per pass takes the short
// factors for these 12 prompt ids and 16 steps, as llama.cpp did).
func phi3Browser(t *testing.T, b *browsertest.Browser, files []*golden.File) {
	models := t.TempDir()
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b.Open(srv.URL + "/test.html")
	for i, g := range files {
		in := g.ModelPath()
		name := fmt.Sprint(i)
		browsertest.Convert(t, in, filepath.Join(models, name), browsertest.ConvertOptions{})
		_, tok, err := source.Load(in, "")
		if err != nil {
			t.Fatal(err)
		}
		// The text leaves special tokens out (tiny-phi35mini's greedy ids
		// hold <|assistant|>).
		want := tok.DecodeOpts(g.Greedy, tokenizer.DecodeOptions{SkipSpecial: true})
		for _, backend := range []string{"webgpu", "cpu"} {
			mustLoad(t, b, map[string]any{"model": "/models/" + name + "/", "backend": backend, "contextLength": 64})
			got := complete(t, b, map[string]any{"prompt": g.Tokens, "max_tokens": len(g.Greedy), "temperature": 0, "ignore_eos": true})
			if got.Choices[0].Text != want {
				t.Errorf("%s on %s: %q, golden greedy ids decode to %q", g.Name, backend, got.Choices[0].Text, want)
			}
			t.Logf("%s on %s: %q", g.Name, backend, got.Choices[0].Text)
			b.MustRun(`engine.unload()`, nil)
		}
	}
}

// phi3Files is the vendored phi3 golden, or with shared every short exact
// golden of the shared set (both models, F32, Q8_0, Q4_0).
func phi3Files(t *testing.T, shared bool) []*golden.File {
	if !shared {
		return []*golden.File{golden.Read(t, browsertest.RepoFile("testdata/phi3/golden/tiny-phi4mini-q4_0.golden"))}
	}
	return golden.FilesJSON(t, filepath.Join(shareddata.Dir(t, "testdata-phi3"), "golden"), "exact", false, false)
}

// TestPhi3Chromium and TestPhi3Firefox run tiny-phi4mini-q4_0 (partial
// rotary, LongRoPE, tied, o200k split) in each browser on both backends;
// the Shared variants run the six short exact goldens of the shared set
// (make test-extended).
func TestPhi3Chromium(t *testing.T) { phi3Browser(t, browsertest.NewBrowser(t), phi3Files(t, false)) }
func TestPhi3Firefox(t *testing.T)  { phi3Browser(t, browsertest.NewFirefox(t), phi3Files(t, false)) }
func TestPhi3SharedChromium(t *testing.T) {
	phi3Browser(t, browsertest.NewBrowser(t), phi3Files(t, true))
}
func TestPhi3SharedFirefox(t *testing.T) {
	phi3Browser(t, browsertest.NewFirefox(t), phi3Files(t, true))
}
