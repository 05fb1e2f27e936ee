package model

import (
	"errors"
	"math"
	"slices"
	"testing"

	"wasmllm/loader"
)

// TestGemma3QNorm: a 62-layer gemma3 (27B) has its q norm weight scaled by
// sqrt(Dh/(D/H)), so that Attend's 1/sqrt(Dh) gives llama.cpp's
// 1/sqrt(D/H); other sizes keep the stored weight.
func TestGemma3QNorm(t *testing.T) {
	w := []float32{1, 2, -0.5}
	q := &loader.Tensor{Name: "blk.0.attn_q_norm.weight", DType: loader.F32, Shape: []int{3}, Data: f32Bytes(w)}
	c := Config{Layers: 62, Heads: 32, Hidden: 5376, HeadDim: 128}
	got, err := gemma3QNorm(&c, NameQNorm, []*loader.Tensor{q})
	if err != nil {
		t.Fatal(err)
	}
	v, err := got.F32()
	if err != nil {
		t.Fatal(err)
	}
	f := math.Sqrt(128.0 / 168)
	for i := range w {
		if math.Abs(float64(v[i])-float64(w[i])*f) > 1e-6 {
			t.Errorf("27B: value %d is %v, want %v", i, v[i], float64(w[i])*f)
		}
	}
	// With the scale: (q·k)·1/sqrt(Dh) after the fold equals the 27B's
	// (q·k)·1/sqrt(D/H) before it.
	if s := f / math.Sqrt(128); math.Abs(s-1/math.Sqrt(168)) > 1e-12 {
		t.Errorf("effective scale %v, want %v", s, 1/math.Sqrt(168))
	}
	c.Layers = 26 // 1B
	same, err := gemma3QNorm(&c, NameQNorm, []*loader.Tensor{q})
	if err != nil || same != q {
		t.Errorf("1B: %v, %v; want the stored tensor", same, err)
	}
}

// TestGemma4ConfigBounds: Validate refuses the Gemma 4 fields out of
// range or on a family without them, and counts the per-layer tables
// against MaxParams.
func TestGemma4ConfigBounds(t *testing.T) {
	S, F := LayerSlidingAttention, LayerFullAttention
	ok := Config{Arch: ArchGemma4, Vocab: 512, Hidden: 64, Layers: 6, Heads: 4, KVHeads: 1, HeadDim: 64, HeadDimSWA: 32,
		FFN: 96, RMSEps: 1e-6, RopeTheta: 1e6, RopeLocalTheta: 1e4, SlidingWindow: 6, SharedKVLayers: 3, PerLayerInput: 32,
		LayerTypes: []string{S, S, F, S, S, F}, LayerFFN: []int{96, 96, 96, 192, 192, 192}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("tiny-gemma4's config: %v", err)
	}
	for name, bad := range map[string]func(c *Config){
		"head_dim_swa odd":               func(c *Config) { c.HeadDimSWA = 33 },
		"layer widths short":             func(c *Config) { c.LayerFFN = []int{96} },
		"layer width zero":               func(c *Config) { c.LayerFFN[2] = 0 },
		"sources not local then global":  func(c *Config) { c.SharedKVLayers = 2 },
		"shared KV on gemma3":            func(c *Config) { c.Arch = ArchGemma3; c.HeadDimSWA, c.LayerFFN, c.PerLayerInput = 0, nil, 0 },
		"per-layer input past MaxParams": func(c *Config) { c.Vocab, c.PerLayerInput, c.Layers = MaxVocab, MaxHidden, 1000 },
		"negative per-layer input":       func(c *Config) { c.PerLayerInput = -1 },
		"sliding layer without a window": func(c *Config) { c.SlidingWindow = 0 },
		"sliding_attention on llama": func(c *Config) {
			c.Arch = ArchLlama
			c.HeadDimSWA, c.LayerFFN, c.PerLayerInput, c.SharedKVLayers, c.RopeLocalTheta = 0, nil, 0, 0, 0
		},
		"soft-cap on qwen3": func(c *Config) {
			*c = Config{Arch: ArchQwen3, Vocab: 8, Hidden: 8, Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 8, FFN: 8, RMSEps: 1e-6, RopeTheta: 1e4, QKNorm: true, FinalLogitSoftcap: 30}
		},
	} {
		c := ok
		c.LayerTypes, c.LayerFFN = slices.Clone(ok.LayerTypes), slices.Clone(ok.LayerFFN)
		bad(&c)
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *ConfigError", name, err)
		}
	}
}
