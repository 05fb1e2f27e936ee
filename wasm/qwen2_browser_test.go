//go:build !js

package main

import (
	"path/filepath"
	"testing"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/golden"
	"wasmllm/source"
)

// TestQwen2 converts the tiny Qwen2 GGUFs (q/k/v biases: the merged bias
// goes from the shard straight to the GPU with the weights) and generates
// each golden's greedy continuation of its prompt ids in the browser, on
// WebGPU and on the CPU backend.
func TestQwen2(t *testing.T) {
	t.Parallel()
	models := t.TempDir()
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	for _, q := range []string{"f32", "q8_0"} {
		g := golden.Read(t, browsertest.RepoFile("testdata/qwen2/golden/tiny-qwen2-"+q+".golden"))
		in := g.ModelPath()
		browsertest.Convert(t, in, filepath.Join(models, q), browsertest.ConvertOptions{})
		_, tok, err := source.Load(in, "")
		if err != nil {
			t.Fatal(err)
		}
		want := tok.Decode(g.Greedy)
		for _, backend := range []string{"webgpu", "cpu"} {
			mustLoad(t, b, map[string]any{"model": "/models/" + q + "/", "backend": backend, "contextLength": 64})
			got := complete(t, b, map[string]any{"prompt": g.Tokens, "max_tokens": len(g.Greedy), "temperature": 0})
			if got.Choices[0].Text != want {
				t.Errorf("%s on %s: %q, golden greedy ids decode to %q", q, backend, got.Choices[0].Text, want)
			}
			t.Logf("%s on %s: %q", q, backend, got.Choices[0].Text)
			b.MustRun(`engine.unload()`, nil)
		}
	}
}
