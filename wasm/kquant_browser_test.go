//go:build !js

package main

import (
	"path/filepath"
	"testing"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/golden"
	"wasmllm/source"
	"wasmllm/tokenizer"
)

// TestStackedKQuant converts k-llama3-q3_k_m, whose q/k/v are Q3_K q and k
// rows with Q5_K v rows (stacked: row blocks in their own types, format
// version 3), and generates the golden's greedy continuation in the
// browser, on WebGPU and on the CPU backend (its ranks take the blocks
// straight from the shards), in Chromium and in Firefox.
func TestStackedKQuant(t *testing.T) { stackedKQuant(t, browsertest.NewBrowser(t)) }

// TestStackedKQuantFirefox is TestStackedKQuant in Firefox.
func TestStackedKQuantFirefox(t *testing.T) { stackedKQuant(t, browsertest.NewFirefox(t)) }

func stackedKQuant(t *testing.T, b *browsertest.Browser) {
	models := t.TempDir()
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b.Open(srv.URL + "/test.html")
	g := golden.Read(t, browsertest.RepoFile("testdata/k/golden/k-llama3-q3_k_m.golden"))
	in := g.ModelPath()
	browsertest.Convert(t, in, filepath.Join(models, "k"), browsertest.ConvertOptions{})
	_, tok, err := source.Load(in, "")
	if err != nil {
		t.Fatal(err)
	}
	// the completion's text leaves out special tokens, and this random
	// model's greedy run emits some
	want := tok.DecodeOpts(g.Greedy, tokenizer.DecodeOptions{SkipSpecial: true})
	for _, backend := range []string{"webgpu", "cpu"} {
		mustLoad(t, b, map[string]any{"model": "/models/k/", "backend": backend, "contextLength": 64})
		got := complete(t, b, map[string]any{"prompt": g.Tokens, "max_tokens": len(g.Greedy), "temperature": 0})
		if got.Choices[0].Text != want {
			t.Errorf("on %s: %q, golden greedy ids decode to %q", backend, got.Choices[0].Text, want)
		}
		t.Logf("on %s: %q", backend, got.Choices[0].Text)
		b.MustRun(`engine.unload()`, nil)
	}
}
