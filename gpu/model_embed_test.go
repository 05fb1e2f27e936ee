//go:build js

package gpu

import (
	"path/filepath"
	"testing"

	"wasmllm/cpu"
	"wasmllm/gpu/webgpu"
	"wasmllm/internal/testkit/embedgolden"
	"wasmllm/loader"
	"wasmllm/model"
)

// TestEmbedGoldens runs the vendored embedding models (tiny-bert-cls: CLS
// pooling, learned positions, GELU; tiny-nomic-bert: rotary, SwiGLU, mean
// pooling; tiny-qwen3-embed: the qwen3 decoder, last-token pooling;
// tiny-gemma-embedding: gemma3's layers bidirectionally, GQA, a symmetric
// window on the local layers, mean pooling and dense projections) on
// WebGPU and on the CPU backend in the browser against llama.cpp's exact
// goldens: pooled and normalised vectors, a batch of three inputs of
// different lengths run as one batch, and per-token rows.
func TestEmbedGoldens(t *testing.T) {
	dir := "../testdata/embed"
	for _, name := range []string{"tiny-bert-cls-q4_0", "tiny-nomic-bert-q4_0", "tiny-qwen3-embed-q4_0", "tiny-gemma-embedding-q4_0"} {
		g, err := embedgolden.Read(filepath.Join(dir, "golden", name+".json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		for _, be := range []string{"webgpu", "cpu"} {
			t.Run(name+"/"+be, func(t *testing.T) {
				var b model.Backend = cpu.New(1)
				if be == "webgpu" {
					b = newTestBackend(t, webgpu.Options{})
				}
				gg, err := loader.ReadGGUF(filepath.Join(dir, "models", name+".gguf"))
				if err != nil {
					t.Fatal(err)
				}
				var e embedgolden.Embedder
				if model.IsEncoderGGUF(gg) {
					w, err := model.EncoderFromGGUF(gg)
					if err != nil {
						t.Fatal(err)
					}
					enc, err := model.BuildEncoder(b, w)
					if err != nil {
						t.Fatal(err)
					}
					e = embedgolden.Embedder{Embed: enc.Embed, Hidden: enc.Hidden, Normalize: model.Normalize}
				} else {
					pool, _, err := model.DecoderPooling(gg)
					if err != nil {
						t.Fatal(err)
					}
					w, err := model.FromGGUF(gg)
					if err != nil {
						t.Fatal(err)
					}
					m, err := model.Build(b, w)
					if err != nil {
						t.Fatal(err)
					}
					d := &model.DecoderEmbedder{M: m, Pooling: pool}
					e = embedgolden.Embedder{Embed: d.Embed, Hidden: d.Hidden, Normalize: model.Normalize}
				}
				worst := embedgolden.Check(t, g, e, 1)
				t.Logf("%s on %s: worst rel err %.3g (tolerance %g)", name, be, worst, *g.Tolerance)
			})
		}
	}
}
