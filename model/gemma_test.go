package model_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/internal/testkit/shareddata"
	"wasmllm/model"
)

// gemmaGoldens keeps the files of goldens whose model's name starts with
// prefix (tiny-gemma3-, tiny-gemma4-, tiny-gemma4moe-).
func gemmaGoldens(files []*golden.File, prefix string) []*golden.File {
	var out []*golden.File
	for _, g := range files {
		if strings.HasPrefix(filepath.Base(g.Model), prefix) {
			out = append(out, g)
		}
	}
	return out
}

// TestGoldenCPUSharedGemma3 runs every exact tiny-gemma3 golden of the
// shared data (F32, Q8_0, Q4_0 and the F32 256-token one, tolerance 5e-3:
// llama.cpp's GELU is an f16 table) on the CPU engine (make
// test-extended).
func TestGoldenCPUSharedGemma3(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "testdata-gemma"), "golden")
	files := gemmaGoldens(golden.FilesJSON(t, dir, "exact", true, false), "tiny-gemma3-")
	if len(files) != 4 {
		t.Fatalf("%d exact tiny-gemma3 goldens, want 4", len(files))
	}
	checkGoldenDir(t, files)
}

const gemmaDir = "../testdata/gemma"

// TestGoldenCPUGemma3 runs the vendored tiny-gemma3-q4_0 golden (12
// prompt rows in one batch, 16 greedy steps through the cache, past the
// local layers' window of 5) on the CPU engine, and with the weights
// split across 2 ranks.
func TestGoldenCPUGemma3(t *testing.T) {
	files := gemmaGoldens(golden.Files(t, gemmaDir+"/golden", "exact", true, false), "tiny-gemma3-")
	if len(files) != 1 {
		t.Fatalf("%d exact tiny-gemma3 goldens, want 1", len(files))
	}
	checkGoldenDir(t, files)
	for _, g := range files {
		t.Run(g.Name+"/ranks=2", func(t *testing.T) {
			m, err := model.Build(cpu.NewLocalRanks(cpu.RankOptions{Ranks: 2, MinShardBytes: 1}), loadWeights(t, g.ModelPath()))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, m, g, g.Tolerance)
		})
	}
}

// TestGemma3Config reads tiny-gemma3's keys: five local layers then a
// global one (no sliding_window_pattern key: llama.cpp's period of 6),
// the local base 1e4 unscaled, the global base 1e6 with linear scaling
// ×8, the sandwich norms, GeGLU, tied embeddings and the √H scale.
func TestGemma3Config(t *testing.T) {
	w := loadWeights(t, gemmaDir+"/models/tiny-gemma3-q4_0.gguf")
	c := w.Config
	S, F := model.LayerSlidingAttention, model.LayerFullAttention
	if c.Arch != model.ArchGemma3 || c.Layers != 6 || !slices.Equal(c.LayerTypes, []string{S, S, S, S, S, F}) ||
		c.SlidingWindow != 5 || c.RopeTheta != 1e6 || c.RopeLocalTheta != 1e4 || c.HeadDim != 32 || c.Heads != 4 || c.KVHeads != 2 ||
		!c.QKNorm || !c.RopeNeoX || !c.TiedEmbeddings || c.RopeScaling == nil || c.RopeScaling.Type != model.RopeLinear || c.RopeScaling.Factor != 8 {
		t.Fatalf("config %+v", c)
	}
	if got := c.EmbedScale(); got != 8 {
		t.Errorf("embedding scale %v, want 8 (sqrt 64)", got)
	}
	for l, sp := range c.Specs() {
		a := sp.Attention
		local := l < 5
		wantWindow, wantTheta := 0, 1e6
		if local {
			wantWindow, wantTheta = 5, 1e4
		}
		if a.Window != wantWindow || a.Rope.Theta != wantTheta || (a.Rope.Scaling == nil) != local || !a.PostNorm ||
			sp.Channel.Kind != model.ChannelGeGLU || !sp.Channel.PostNorm || !a.Rope.NeoX || a.Rope.Dim != 32 {
			t.Errorf("layer %d spec %+v", l, sp)
		}
		for _, n := range []string{model.NamePostAttnNorm, model.NamePostFFNNorm} {
			if _, ok := w.Tensors[fmt.Sprintf(n, l)]; !ok {
				t.Errorf("layer %d lacks %s", l, fmt.Sprintf(n, l))
			}
		}
	}
	// The global layer's frequencies are the local formula's over 8.
	g := c.Specs()[5].Attention.Rope.InvFreq()
	if want := float32(1.0 / 8); g[0] != want {
		t.Errorf("global layer's first frequency %v, want %v", g[0], want)
	}
}

// TestGoldenCPUSharedGemma4 runs every exact tiny-gemma4 golden of the
// shared data (F32, Q8_0, Q4_0 and the F32 256-token one; tolerance 5e-3)
// on the CPU engine: per-layer head dims and FFN widths, shared KV,
// per-layer embeddings, attention scale 1, the soft-cap (make
// test-extended).
func TestGoldenCPUSharedGemma4(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "testdata-gemma"), "golden")
	files := gemmaGoldens(golden.FilesJSON(t, dir, "exact", true, false), "tiny-gemma4-")
	if len(files) != 4 {
		t.Fatalf("%d exact tiny-gemma4 goldens, want 4", len(files))
	}
	checkGoldenDir(t, files)
}

// TestGoldenCPUGemma4 runs the vendored tiny-gemma4-q4_0 golden (Gemma 4
// E2B's layout) on the CPU engine, and with the weights split across 2
// ranks.
func TestGoldenCPUGemma4(t *testing.T) {
	files := gemmaGoldens(golden.Files(t, gemmaDir+"/golden", "exact", true, false), "tiny-gemma4-")
	if len(files) != 1 {
		t.Fatalf("%d exact tiny-gemma4 goldens, want 1", len(files))
	}
	checkGoldenDir(t, files)
	for _, g := range files {
		t.Run(g.Name+"/ranks=2", func(t *testing.T) {
			m, err := model.Build(cpu.NewLocalRanks(cpu.RankOptions{Ranks: 2, MinShardBytes: 1}), loadWeights(t, g.ModelPath()))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, m, g, g.Tolerance)
		})
		// The per-layer table kept on the host: its rows gathered and
		// written per batch, 6 layers × 32 × 4 bytes a token.
		t.Run(g.Name+"/per-layer-on-host", func(t *testing.T) {
			w := loadWeights(t, g.ModelPath())
			w.PerLayerOnHost = true
			m, err := model.Build(cpu.New(0), w)
			if err != nil {
				t.Fatal(err)
			}
			if m.PLEmbed != nil || !m.PerLayerOnHost() || !m.HostIDs() || m.PerLayerUploadBytes() != 6*32*4 {
				t.Fatalf("table uploaded %v, on host %v, %d bytes a token", m.PLEmbed != nil, m.PerLayerOnHost(), m.PerLayerUploadBytes())
			}
			checkGolden(t, m, g, g.Tolerance)
		})
	}
}

// TestGemma4Config reads tiny-gemma4's keys and checks the layers they
// make: s s g s s g with head dims 32/64, FFN 96 then 192 on the shared-KV
// layers, layers 3 and 4 reading layer 1's KV and layer 5 layer 2's, two
// KV groups, rope_freqs on the global layers only, and the merged q/k/v
// norm weight (q's times sqrt(Dh), v's ones).
func TestGemma4Config(t *testing.T) {
	w := loadWeights(t, gemmaDir+"/models/tiny-gemma4-q4_0.gguf")
	c := w.Config
	S, F := model.LayerSlidingAttention, model.LayerFullAttention
	if c.Arch != model.ArchGemma4 || c.Layers != 6 || !slices.Equal(c.LayerTypes, []string{S, S, F, S, S, F}) ||
		c.HeadDim != 64 || c.HeadDimSWA != 32 || c.SlidingWindow != 6 || c.SharedKVLayers != 3 || c.PerLayerInput != 32 ||
		!slices.Equal(c.LayerFFN, []int{96, 96, 96, 192, 192, 192}) || c.FinalLogitSoftcap != 30 || !c.TiedEmbeddings || c.RopeLocalTheta != 1e4 {
		t.Fatalf("config %+v", c)
	}
	wantSrc := []int{-1, -1, -1, 1, 1, 2}
	for l, sp := range c.Specs() {
		a := sp.Attention
		dh := 32
		if l == 2 || l == 5 {
			dh = 64
		}
		if a.HeadDim != dh || a.Rope.Dim != dh || a.Rope.NoFactors != (dh == 32) || !a.NormQKV || a.QKNorm ||
			a.SharesKV != (wantSrc[l] >= 0) || (a.SharesKV && a.KVSource != wantSrc[l]) || !sp.PerLayer || !sp.OutScale {
			t.Errorf("layer %d spec %+v", l, sp)
		}
	}
	groups, group, index := c.KVGroups()
	if len(groups) != 2 || groups[0] != (model.KVGroup{KVHeads: 1, HeadDim: 32, Layers: 2}) || groups[1] != (model.KVGroup{KVHeads: 1, HeadDim: 64, Layers: 1}) ||
		!slices.Equal(group, []int{0, 0, 1, 0, 0, 1}) || !slices.Equal(index, []int{0, 1, 0, 1, 1, 0}) {
		t.Errorf("KV groups %+v, layer groups %v, indexes %v", groups, group, index)
	}
	norm, err := w.Tensors[fmt.Sprintf(model.NameQKVNorm, 0)].F32()
	if err != nil {
		t.Fatal(err)
	}
	if len(norm) != (4+2)*32 || norm[4*32+32] != 1 || norm[len(norm)-1] != 1 || norm[0] < 1 {
		t.Errorf("layer 0's q/k/v norm weight: %d values, v's %v, q's first %v", len(norm), norm[4*32+32:], norm[0])
	}
	if n := w.Tensors[fmt.Sprintf(model.NameQKVNorm, 3)]; n == nil || n.NumElements() != 4*32 {
		t.Errorf("layer 3 (shared KV): q/k/v norm %v, want q's alone", n)
	}
}

// TestGoldenCPUSharedGemma4MoE runs every exact tiny-gemma4moe golden of
// the shared data (F32, Q8_0, Q4_0; tolerance 5e-3) on the CPU engine:
// Gemma 4 26B-A4B's GeGLU MoE beside the dense GeGLU (router input scale,
// per-expert scales, three more norms), per-layer KV-head counts and the
// global layers' k = v (make test-extended).
func TestGoldenCPUSharedGemma4MoE(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "testdata-gemma"), "golden")
	files := gemmaGoldens(golden.FilesJSON(t, dir, "exact", true, false), "tiny-gemma4moe-")
	if len(files) != 3 {
		t.Fatalf("%d exact tiny-gemma4moe goldens, want 3", len(files))
	}
	checkGoldenDir(t, files)
}

// TestGoldenCPUGemma4MoE runs the vendored tiny-gemma4moe-q4_0 golden
// (Gemma 4 26B-A4B's layout) on the CPU engine, and with the weights
// split across 2 ranks.
func TestGoldenCPUGemma4MoE(t *testing.T) {
	files := gemmaGoldens(golden.Files(t, gemmaDir+"/golden", "exact", true, false), "tiny-gemma4moe-")
	if len(files) != 1 {
		t.Fatalf("%d exact tiny-gemma4moe goldens, want 1", len(files))
	}
	checkGoldenDir(t, files)
	for _, g := range files {
		t.Run(g.Name+"/ranks=2", func(t *testing.T) {
			m, err := model.Build(cpu.NewLocalRanks(cpu.RankOptions{Ranks: 2, MinShardBytes: 1}), loadWeights(t, g.ModelPath()))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, m, g, g.Tolerance)
		})
	}
}

// TestGemma4MoEConfig reads tiny-gemma4moe's keys and checks the layers
// they make: s g s g with head dims 32/64 and KV heads 2/1 (two KV
// groups), 8 experts of 32, top 2 renormalised, beside a dense GeGLU of
// 64; the global layers' merged q/k/v repeating k's rows as v's
// (attention_k_eq_v); the router's input weight scale/sqrt(D).
func TestGemma4MoEConfig(t *testing.T) {
	w := loadWeights(t, gemmaDir+"/models/tiny-gemma4moe-q4_0.gguf")
	c := w.Config
	S, F := model.LayerSlidingAttention, model.LayerFullAttention
	if c.Arch != model.ArchGemma4 || c.Layers != 4 || !slices.Equal(c.LayerTypes, []string{S, F, S, F}) ||
		c.HeadDim != 64 || c.HeadDimSWA != 32 || c.KVHeads != 2 || !slices.Equal(c.LayerKVHeads, []int{2, 1, 2, 1}) ||
		c.Experts != 8 || c.ExpertsUsed != 2 || c.ExpertFFN != 32 || c.FFN != 64 || !c.NormTopK || c.PerLayerInput != 0 || c.SharedKVLayers != 0 {
		t.Fatalf("config %+v", c)
	}
	for l, sp := range c.Specs() {
		ch, a := sp.Channel, sp.Attention
		if ch.Kind != model.ChannelGeGLUMoE || ch.FFN != 64 || ch.ExpertFFN != 32 || ch.Experts != 8 || ch.ExpertsUsed != 2 ||
			a.KVHeads != []int{2, 1, 2, 1}[l] || sp.PerLayer || !sp.OutScale {
			t.Errorf("layer %d spec %+v", l, sp)
		}
	}
	groups, _, _ := c.KVGroups()
	if len(groups) != 2 || groups[0] != (model.KVGroup{KVHeads: 2, HeadDim: 32, Layers: 2}) || groups[1] != (model.KVGroup{KVHeads: 1, HeadDim: 64, Layers: 2}) {
		t.Errorf("KV groups %+v", groups)
	}
	// Layer 1 (global, no attn_v): q (4×64), k (64), v = k.
	qkv := w.Tensors[fmt.Sprintf(model.NameQKV, 1)]
	if qkv == nil || !slices.Equal(qkv.Shape, []int{(4 + 2) * 64, 64}) {
		t.Fatalf("layer 1 qkv %v", qkv)
	}
	rows, err := qkv.F32()
	if err != nil {
		t.Fatal(err)
	}
	k, v := rows[4*64*64:5*64*64], rows[5*64*64:]
	if !slices.Equal(k, v) {
		t.Errorf("layer 1 (attention_k_eq_v): v's rows differ from k's")
	}
	for _, n := range []string{model.NameRouterNorm, model.NameExpertScale, model.NamePreFFNNorm2, model.NamePostFFNNorm1, model.NamePostFFNNorm2, model.NameGateUpExps} {
		if w.Tensors[fmt.Sprintf(n, 0)] == nil {
			t.Errorf("layer 0 lacks %s", fmt.Sprintf(n, 0))
		}
	}
}
