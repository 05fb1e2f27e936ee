package model

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"wasmllm/loader"
)

// qwen35Meta is tiny-qwen35's hybrid metadata, the keys ggufHybrid reads.
func qwen35Meta() map[string]any {
	return map[string]any{
		"qwen35.attention.key_length":       uint32(64),
		"qwen35.attention.value_length":     uint32(64),
		"qwen35.rope.dimension_count":       uint32(16),
		"qwen35.rope.dimension_sections":    []int32{3, 3, 2, 0},
		"qwen35.ssm.conv_kernel":            uint32(4),
		"qwen35.ssm.state_size":             uint32(32),
		"qwen35.ssm.group_count":            uint32(2),
		"qwen35.ssm.time_step_rank":         uint32(4),
		"qwen35.ssm.inner_size":             uint32(128),
		"qwen35.full_attention_interval":    uint32(4),
		"qwen35moe.rope.dimension_sections": []int32{3, 3, 2, 0},
	}
}

func hybrid(t *testing.T, meta map[string]any, layers int) (*Config, error) {
	t.Helper()
	c := &Config{Arch: ArchQwen35, Layers: layers, HeadDim: 64}
	return c, ggufHybrid(&loader.GGUF{File: "x.gguf", Meta: meta}, ArchQwen35, c)
}

// TestGGUFHybridPattern: the layer types from full_attention_interval (4
// when missing), recurrent_layers overriding it, and the trunk without
// the NextN blocks.
func TestGGUFHybridPattern(t *testing.T) {
	L, F := LayerLinearAttention, LayerFullAttention
	cases := []struct {
		name   string
		set    map[string]any
		layers int
		want   []string
	}{
		{"interval 4", nil, 8, []string{L, L, L, F, L, L, L, F}},
		{"interval 2, a linear last layer", map[string]any{"qwen35.full_attention_interval": uint32(2)}, 5, []string{L, F, L, F, L}},
		{"default interval", map[string]any{"qwen35.full_attention_interval": nil}, 4, []string{L, L, L, F}},
		{"recurrent_layers", map[string]any{"qwen35.attention.recurrent_layers": []bool{false, true, true, false}}, 4, []string{F, L, L, F}},
		{"nextn block", map[string]any{"qwen35.nextn_predict_layers": uint32(1)}, 5, []string{L, L, L, F}},
	}
	for _, tc := range cases {
		meta := qwen35Meta()
		for k, v := range tc.set {
			if v == nil {
				delete(meta, k)
			} else {
				meta[k] = v
			}
		}
		c, err := hybrid(t, meta, tc.layers)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(c.LayerTypes, tc.want) || c.Layers != len(tc.want) {
			t.Errorf("%s: layers %d %v, want %v", tc.name, c.Layers, c.LayerTypes, tc.want)
		}
		if c.RopeDim != 16 || !slices.Equal(c.RopeSections, []int{3, 3, 2, 0}) || c.LinearHeadDim != 32 || c.LinearKeyHeads != 2 || c.LinearValueHeads != 4 || c.LinearConvKernel != 4 {
			t.Errorf("%s: %+v", tc.name, c)
		}
	}
}

// TestGGUFHybridErrors: each inconsistent value is a *loader.FormatError
// naming the key, wrapping a *ConfigError.
func TestGGUFHybridErrors(t *testing.T) {
	cases := []struct {
		key string
		val any // nil: delete it
	}{
		{"qwen35.attention.value_length", uint32(32)},
		{"qwen35.ssm.inner_size", uint32(100)},
		{"qwen35.ssm.time_step_rank", uint32(3)},
		{"qwen35.rope.dimension_sections", nil},
		{"qwen35.nextn_predict_layers", uint32(4)},
		{"qwen35.ssm.state_size", uint32(0)},
		{"qwen35.full_attention_interval", uint32(0)},
		{"qwen35.attention.recurrent_layers", []bool{true}},
		{"qwen35.ssm.conv_kernel", nil},
	}
	for _, tc := range cases {
		meta := qwen35Meta()
		if tc.val == nil {
			delete(meta, tc.key)
		} else {
			meta[tc.key] = tc.val
		}
		_, err := hybrid(t, meta, 4)
		var fe *loader.FormatError
		if !errors.As(err, &fe) || !strings.HasSuffix(fe.Field, strings.TrimPrefix(tc.key, "qwen35.")) {
			t.Errorf("%s = %v: got %v, want a FormatError naming it", tc.key, tc.val, err)
			continue
		}
		var ce *ConfigError
		if tc.val != nil && !errors.As(err, &ce) {
			t.Errorf("%s = %v: %v wraps no *ConfigError", tc.key, tc.val, err)
		}
	}
}

// TestValidateHybrid: Validate refuses what the hybrid family's row and
// the Gated DeltaNet sizes do not allow.
func TestValidateHybrid(t *testing.T) {
	base := func() Config {
		return Config{Arch: ArchQwen35, Vocab: 512, Hidden: 128, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 64, FFN: 128,
			RMSEps: 1e-6, RopeTheta: 1e7, QKNorm: true, RopeNeoX: true, AttnOutputGate: true, RopeDim: 16, RopeSections: []int{3, 3, 2, 0},
			LayerTypes:       []string{LayerLinearAttention, LayerFullAttention},
			LinearConvKernel: 4, LinearKeyHeads: 2, LinearValueHeads: 4, LinearHeadDim: 32}
	}
	c := base()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(c *Config){
		"layer_types":                     func(c *Config) { c.LayerTypes = c.LayerTypes[:1] },
		"layer_types[1]":                  func(c *Config) { c.LayerTypes[1] = "mamba" },
		"linear_num_value_heads":          func(c *Config) { c.LinearValueHeads = 3 },
		"linear_conv_kernel_dim":          func(c *Config) { c.LinearConvKernel = 0 },
		"rope_dim":                        func(c *Config) { c.RopeDim = 66 },
		"rope_sections":                   func(c *Config) { c.RopeSections = []int{1, 2} },
		"shared_expert_intermediate_size": func(c *Config) { c.SharedExpertFFN = 64 },
	}
	for field, f := range bad {
		c := base()
		f(&c)
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("%s: got %v", field, err)
		}
	}
	q3 := Config{Arch: ArchQwen3, Vocab: 8, Hidden: 8, Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 8, FFN: 8, RMSEps: 1e-6, RopeTheta: 1e4,
		LayerTypes: []string{LayerLinearAttention}, LinearConvKernel: 4, LinearKeyHeads: 1, LinearValueHeads: 1, LinearHeadDim: 8}
	var ce *ConfigError
	if err := q3.Validate(); !errors.As(err, &ce) || ce.Field != "layer_types" {
		t.Errorf("qwen3 with linear layers: got %v", err)
	}
}
