package model

import (
	"fmt"
	"math"

	"wasmllm/loader"
)

// Gemma 4's layers (E2B, E4B, 26B-A4B): Gemma 3's kinds (local and global
// attention, sandwich norms, GeGLU, the embedding scale, the soft-cap),
// with the local layers' own head dim, per-layer FFN widths, q, k and v
// RMS-normed per head (v without a weight) in the q/k/v projection's
// epilogue, attention scale 1 (folded into q's norm weight), rope_freqs
// on the global layers only, the last SharedKVLayers layers reading an
// earlier layer's keys and values, and per-layer embeddings with a gated
// input at the end of each layer and an output scale. The MoE variant
// (26B-A4B) has per-layer KV-head counts, global layers whose values are
// their keys' projection (attention_k_eq_v: the mapper repeats attn_k as
// v's rows) and a GeGLU MoE beside the dense GeGLU (ChannelGeGLUMoE,
// GemmaMoE).

var gemma4Attention = AttentionFeatures{SlidingWindow: true, LocalGlobal: true, SandwichNorm: true, Gemma4: true}

// gemma4Layer sets layer l's Gemma 4 parameters on its spec.
func (c *Config) gemma4Layer(sp *LayerSpec, l int) {
	a := &sp.Attention
	a.NormQKV, a.QKNorm = true, false
	if c.Local(l) {
		if c.HeadDimSWA > 0 {
			a.HeadDim, a.Rope.Dim = c.HeadDimSWA, c.HeadDimSWA
		}
		a.Rope.NoFactors = true
	}
	if l < len(c.LayerFFN) {
		sp.Channel.FFN = c.LayerFFN[l]
	}
	if l < len(c.LayerKVHeads) {
		a.KVHeads = c.LayerKVHeads[l]
	}
	if first := c.Layers - c.SharedKVLayers; c.SharedKVLayers > 0 && l >= first {
		a.SharesKV = true
		a.KVSource = first - 1
		if c.Local(l) {
			a.KVSource = first - 2
		}
	}
	sp.PerLayer = c.PerLayerInput > 0
	sp.OutScale = true
}

// validateGemma4 checks the Gemma 4 fields against the family fam. Errors
// are *ConfigError.
func (c *Config) validateGemma4(fam *Family) error {
	g4 := fam.Attention.Gemma4
	switch {
	case c.HeadDimSWA != 0 && !g4:
		return &ConfigError{"head_dim_swa", c.HeadDimSWA, fmt.Sprintf("architecture %s has one head dim", c.Arch)}
	case c.LayerFFN != nil && !g4:
		return &ConfigError{"layer_intermediate_sizes", c.LayerFFN, fmt.Sprintf("architecture %s has one FFN width", c.Arch)}
	case c.SharedKVLayers != 0 && !g4:
		return &ConfigError{"num_kv_shared_layers", c.SharedKVLayers, fmt.Sprintf("architecture %s shares no KV", c.Arch)}
	case c.PerLayerInput != 0 && !fam.PerLayerInput:
		return &ConfigError{"hidden_size_per_layer_input", c.PerLayerInput, fmt.Sprintf("architecture %s has no per-layer embeddings", c.Arch)}
	case c.HeadDimSWA < 0 || c.HeadDimSWA > MaxHeadDim || c.HeadDimSWA%2 != 0:
		return &ConfigError{"head_dim_swa", c.HeadDimSWA, fmt.Sprintf("want an even value in 0..%d", MaxHeadDim)}
	case c.PerLayerInput < 0 || c.PerLayerInput > MaxHidden:
		return &ConfigError{"hidden_size_per_layer_input", c.PerLayerInput, fmt.Sprintf("want 0..%d", MaxHidden)}
	case c.LayerFFN != nil && len(c.LayerFFN) != c.Layers:
		return &ConfigError{"layer_intermediate_sizes", len(c.LayerFFN), fmt.Sprintf("want one size per layer (%d)", c.Layers)}
	case c.LayerKVHeads != nil && !g4:
		return &ConfigError{"layer_num_kv_heads", c.LayerKVHeads, fmt.Sprintf("architecture %s has one KV-head count", c.Arch)}
	case c.LayerKVHeads != nil && len(c.LayerKVHeads) != c.Layers:
		return &ConfigError{"layer_num_kv_heads", len(c.LayerKVHeads), fmt.Sprintf("want one count per layer (%d)", c.Layers)}
	case fam.MoEChannel != "" && c.MoE() && (c.FFN < 1 || c.FFN > MaxFFN):
		return &ConfigError{"intermediate_size", c.FFN, fmt.Sprintf("want 1..%d (the dense MLP beside the experts)", MaxFFN)}
	}
	for l, h := range c.LayerKVHeads {
		if h < 1 || h > c.KVHeads || c.Heads%h != 0 {
			return &ConfigError{fmt.Sprintf("layer_num_kv_heads[%d]", l), h, fmt.Sprintf("want a divisor of num_heads %d, at most num_kv_heads %d", c.Heads, c.KVHeads)}
		}
	}
	for l, f := range c.LayerFFN {
		if f < 1 || f > MaxFFN {
			return &ConfigError{fmt.Sprintf("layer_intermediate_sizes[%d]", l), f, fmt.Sprintf("want 1..%d", MaxFFN)}
		}
	}
	if s := c.SharedKVLayers; s != 0 {
		first := c.Layers - s
		// The sources are layers first-1 (global) and first-2 (local), as
		// llama.cpp's create_memory assumes.
		if s < 0 || first < 2 || c.Local(first-1) || !c.Local(first-2) {
			return &ConfigError{"num_kv_shared_layers", s, fmt.Sprintf("want layer L-S-1 global and L-S-2 local (block_count %d)", c.Layers)}
		}
	}
	return nil
}

// KVGroup is one KV cache of a model whose attention layers differ in
// KV heads or head dim (Gemma 4): Layers attention layers of Hk heads of
// Dh.
type KVGroup struct{ KVHeads, HeadDim, Layers int }

// KVGroups gives the model's KV caches and, for each layer, its cache
// and its index there (-1, -1 for a layer with no KV of its own: a Gated
// DeltaNet layer, or one that reads another layer's). A model whose
// attention layers all have the config's sizes has one group.
func (c *Config) KVGroups() (groups []KVGroup, group, index []int) {
	specs := c.Specs()
	group, index = make([]int, len(specs)), make([]int, len(specs))
	for l, sp := range specs {
		group[l], index[l] = -1, -1
		if sp.IsDeltaNet() || sp.Attention.SharesKV {
			continue
		}
		a := sp.Attention
		g := -1
		for i, kg := range groups {
			if kg.KVHeads == a.KVHeads && kg.HeadDim == a.HeadDim {
				g = i
			}
		}
		if g < 0 {
			g = len(groups)
			groups = append(groups, KVGroup{KVHeads: a.KVHeads, HeadDim: a.HeadDim})
		}
		group[l], index[l] = g, groups[g].Layers
		groups[g].Layers++
	}
	for l, sp := range specs {
		if sp.Attention.SharesKV {
			src := sp.Attention.KVSource
			group[l], index[l] = group[src], index[src]
		}
	}
	return groups, group, index
}

// GroupedCache is the KV cache of a model with several KV groups
// (Config.KVGroups): one backend cache per group. Model.NewCache returns
// it for such a model.
type GroupedCache struct {
	Groups []KVCache
}

// Capacity implements KVCache.
func (c *GroupedCache) Capacity() int { return c.Groups[0].Capacity() }

// KVHeads implements KVCache: the first group's.
func (c *GroupedCache) KVHeads() int { return c.Groups[0].KVHeads() }

// HeadDim implements KVCache: the first group's.
func (c *GroupedCache) HeadDim() int { return c.Groups[0].HeadDim() }

// gemma4QKVNorm is the merged per-head norm weight of layer l's q/k/v
// projection: q_norm for each query head times sqrt(Dh) (Attend scales
// by 1/sqrt(Dh); Gemma 4's scale is 1), k_norm for each KV head, ones for
// each value head; q's part alone for a layer that shares KV.
func gemma4QKVNorm(a *AttentionSpec, qNorm, kNorm []float32) []float32 {
	Dh := a.HeadDim
	out := make([]float32, 0, a.qkvWidth())
	s := float32(math.Sqrt(float64(Dh)))
	for range a.Heads {
		for _, w := range qNorm {
			out = append(out, w*s)
		}
	}
	if a.SharesKV {
		return out
	}
	for range a.KVHeads {
		out = append(out, kNorm...)
	}
	for range a.KVHeads * Dh {
		out = append(out, 1)
	}
	return out
}

// DType implements KVCacheTyped: the groups' type.
func (c *GroupedCache) DType() loader.DType { return KVDTypeOf(c.Groups[0]) }
