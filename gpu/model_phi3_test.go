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

// Phi-3.5-mini and Phi-4-mini (phi3) on WebGPU: partial rotary and
// LongRoPE (the attention factor in rope_kv, each factor set a frequency
// table) against the goldens of testdata/phi3.

// phi3Goldens runs each phi3 golden on b and on the CPU backend (the KV
// cache of the backend's default type, checkModelGolden), then with an f32
// KV cache against the golden alone; the factor set is the one llama.cpp
// used for the golden (the long one for the 256-token goldens), whatever
// the size of the caches the checks allocate.
func phi3Goldens(t *testing.T, b *Backend, files []*golden.File) {
	for _, g := range files {
		t.Run(g.Name, func(t *testing.T) {
			gm, cm := goldenModels(t, b, goldenWeights(t, g))
			defer freeModel(b, gm)
			mode := model.LongRoPEShort
			if strings.Contains(g.Name, ".long.") {
				mode = model.LongRoPELong
			}
			gm.LongRoPE, cm.LongRoPE = mode, mode
			checkModelGolden(t, gm, cm, g, 0)
			t.Run("f32 kv", func(t *testing.T) { qwen35Golden(t, gm, g, loader.F32) })
		})
	}
}

// TestPhi3Golden runs the vendored phi3 goldens (tiny-phi4mini-q4_0: tied
// embeddings, GQA, 24 of 32 dims rotated, the short factors).
func TestPhi3Golden(t *testing.T) {
	files := golden.Files(t, "../testdata/phi3/golden", "exact", true, false)
	if len(files) != 1 {
		t.Fatalf("%d exact phi3 goldens, want 1", len(files))
	}
	phi3Goldens(t, modelBackend(t), files)
}

// TestPhi3GoldenShared runs every exact golden of the shared phi3 set:
// both models in F32, Q8_0 and Q4_0, and the two 256-token goldens (long
// factors) (make test-extended).
func TestPhi3GoldenShared(t *testing.T) {
	files := golden.FilesJSON(t, filepath.Join(shareddata.Dir(t, "testdata-phi3"), "golden"), "exact", true, false)
	if len(files) != 8 {
		t.Fatalf("%d exact phi3 goldens, want 8", len(files))
	}
	phi3Goldens(t, modelBackend(t), files)
}
