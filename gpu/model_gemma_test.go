//go:build js

package gpu

import (
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/internal/testkit/golden"
	"wasmllm/internal/testkit/shareddata"
	"wasmllm/loader"
	"wasmllm/model"
)

// Gemma on WebGPU: local and global layers, GeGLU (gelu_mul), the
// sandwich norms and soft-cap (post_norm), the embedding scale (scale),
// against the exact goldens (tolerance 5e-3, llama.cpp's GELU table).

// gemmaFiles keeps the goldens whose model's name starts with prefix.
func gemmaFiles(files []*golden.File, prefix string) []*golden.File {
	var out []*golden.File
	for _, g := range files {
		if strings.HasPrefix(filepath.Base(g.Model), prefix) {
			out = append(out, g)
		}
	}
	return out
}

// TestGemma3Golden runs the vendored tiny-gemma3-q4_0 golden on WebGPU
// against the golden and the CPU engine (f32 KV cache: the prompt in one
// batch, then 16 greedy steps past the window of 5), and again with an
// f16 KV cache.
func TestGemma3Golden(t *testing.T) {
	files := gemmaFiles(golden.Files(t, "../testdata/gemma/golden", "exact", true, false), "tiny-gemma3-")
	if len(files) != 1 {
		t.Fatalf("%d vendored tiny-gemma3 goldens, want 1", len(files))
	}
	b := modelBackend(t)
	modelGoldens(t, b, files)
	for _, g := range files {
		t.Run(g.Name+"/f16", func(t *testing.T) {
			m, err := model.Build(b, goldenWeights(t, g))
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, m)
			qwen35Golden(t, m, g, loader.F16)
		})
	}
}

// TestGemma3GoldenShared runs every exact tiny-gemma3 golden of the shared
// data (F32, Q8_0, Q4_0, and the 256-token F32 one) on WebGPU
// (WASMLLM_EXTENDED=1).
func TestGemma3GoldenShared(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "testdata-gemma"), "golden")
	files := gemmaFiles(golden.FilesJSON(t, dir, "exact", true, false), "tiny-gemma3-")
	if len(files) != 4 {
		t.Fatalf("%d shared tiny-gemma3 goldens, want 4", len(files))
	}
	modelGoldens(t, modelBackend(t), files)
}

// TestGemma4Golden runs the vendored tiny-gemma4-q4_0 golden (Gemma 4
// E2B's layout: per-layer head dims and FFN widths, shared KV in two KV
// groups, per-layer embeddings, the soft-cap) on WebGPU against the golden
// and the CPU engine, and again with an f16 KV cache.
func TestGemma4Golden(t *testing.T) {
	files := gemmaFiles(golden.Files(t, "../testdata/gemma/golden", "exact", true, false), "tiny-gemma4-")
	if len(files) != 1 {
		t.Fatalf("%d vendored tiny-gemma4 goldens, want 1", len(files))
	}
	b := modelBackend(t)
	modelGoldens(t, b, files)
	for _, g := range files {
		t.Run(g.Name+"/f16", func(t *testing.T) {
			m, err := model.Build(b, goldenWeights(t, g))
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, m)
			qwen35Golden(t, m, g, loader.F16)
		})
	}
}

// TestGemma4GoldenShared runs every exact tiny-gemma4 golden of the shared
// data (F32, Q8_0, Q4_0, and the 256-token F32 one) on WebGPU
// (WASMLLM_EXTENDED=1).
func TestGemma4GoldenShared(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "testdata-gemma"), "golden")
	files := gemmaFiles(golden.FilesJSON(t, dir, "exact", true, false), "tiny-gemma4-")
	if len(files) != 4 {
		t.Fatalf("%d shared tiny-gemma4 goldens, want 4", len(files))
	}
	modelGoldens(t, modelBackend(t), files)
}
