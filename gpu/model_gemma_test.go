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
// and the CPU engine, again with an f16 KV cache, and with the per-layer
// table kept off the GPU (its rows gathered on the host and written per
// batch: the prompt, then each greedy step).
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
		t.Run(g.Name+"/per-layer-on-host", func(t *testing.T) {
			w := goldenWeights(t, g)
			w.PerLayerOnHost = true
			m, err := model.Build(b, w)
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, m)
			if m.PLEmbed != nil || m.PerLayerUploadBytes() != 6*32*4 {
				t.Fatalf("table on the GPU %v, %d bytes a token", m.PLEmbed != nil, m.PerLayerUploadBytes())
			}
			qwen35Golden(t, m, g, loader.F32)
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

// TestGemma4MoEGolden runs the vendored tiny-gemma4moe-q4_0 golden
// (Gemma 4 26B-A4B's layout: the GeGLU MoE beside the dense GeGLU with
// router input and per-expert scales, per-layer KV heads in two KV groups,
// k = v on the global layers) on WebGPU against the golden and the CPU
// engine, and again with an f16 KV cache.
func TestGemma4MoEGolden(t *testing.T) {
	files := gemmaFiles(golden.Files(t, "../testdata/gemma/golden", "exact", true, false), "tiny-gemma4moe-")
	if len(files) != 1 {
		t.Fatalf("%d vendored tiny-gemma4moe goldens, want 1", len(files))
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

// TestGemma4MoEGoldenShared runs every exact tiny-gemma4moe golden of the
// shared data (F32, Q8_0, Q4_0) on WebGPU (WASMLLM_EXTENDED=1).
func TestGemma4MoEGoldenShared(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "testdata-gemma"), "golden")
	files := gemmaFiles(golden.FilesJSON(t, dir, "exact", true, false), "tiny-gemma4moe-")
	if len(files) != 3 {
		t.Fatalf("%d shared tiny-gemma4moe goldens, want 3", len(files))
	}
	modelGoldens(t, modelBackend(t), files)
}

// TestGemmaDecodeDispatches counts a decode step's dispatches per layer
// (model.LayerMarker): a Gemma 3 layer is 9 (q/k/v, rope_kv, attention's
// two, o_proj and its post-norm, gate_up with GeGLU fused in the GEMV,
// down and its post-norm: the sandwich norms cost one each), a Gemma 4
// layer 15 (q/k/v's per-head norms one more; its per-layer input: the
// gate, gelu_gate, proj with its post-norm; the output scale), a Gemma 4
// MoE layer 18 (no per-layer input; the dense gate_up and down with its
// post-norm, two router GEMVs, the route, the experts' gate_up and down,
// the sum's post-norm, AddNorm; the output scale); later steps replay the
// recorded program.
func TestGemmaDecodeDispatches(t *testing.T) {
	b := modelBackend(t)
	for _, c := range []struct {
		name string
		most int
	}{{"tiny-gemma3-q4_0", 9}, {"tiny-gemma4-q4_0", 15},
		// 18, and 2 more: its q (Q4_0) and k, v (Q8_0) are stacked row
		// blocks in their own types (the norm, then a GEMV per block)
		{"tiny-gemma4moe-q4_0", 20}} {
		t.Run(c.name, func(t *testing.T) {
			g := golden.Read(t, "../testdata/gemma/golden/"+c.name+".golden")
			m, err := model.Build(b, goldenWeights(t, g))
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, m)
			cache, err := m.NewCache(len(g.Tokens) + 4)
			if err != nil {
				t.Fatal(err)
			}
			defer b.FreeKVCache(cache)
			logits := make([]float32, m.Config.Vocab)
			pos := 0
			step := func(ids []int32) {
				out, err := m.Forward(cache, ids, pos, false)
				if err != nil {
					t.Fatal(err)
				}
				pos += len(ids)
				if err := b.ReadF32(out, logits); err != nil {
					t.Fatal(err)
				}
			}
			step(g.Tokens)
			step(g.Greedy[:1])
			per := b.LayerDispatches()
			builds, stats := b.Stats().ProgramBuilds, b.Device().Stats()
			for _, id := range g.Greedy[1:4] {
				step([]int32{id})
			}
			if n, s := b.Stats().ProgramBuilds-builds, b.Device().Stats().Sub(stats); n != 0 || s.Submits != 3 {
				t.Errorf("3 decode steps: %d programs recorded, %d submits; want 0 and 3", n, s.Submits)
			}
			if len(per) != len(m.Layers) {
				t.Fatalf("LayerDispatches %v for %d layers", per, len(m.Layers))
			}
			for l, n := range per {
				t.Logf("layer %d: %d dispatches at decode", l, n)
				if n > c.most {
					t.Errorf("layer %d: %d dispatches, want at most %d", l, n, c.most)
				}
			}
		})
	}
}
