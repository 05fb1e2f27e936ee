package model

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"wasmllm/loader"
)

// ggufGemma3 reads the keys of llama.cpp's gemma3 into c, after fromGGUF
// has read the common ones: the local layers' base and window, which
// layers are local (attention.sliding_window_pattern: a period, or one
// bool per layer, true = local; absent: llama.cpp's period of 6, layer l
// local iff l%6 < 5), linear RoPE scaling and the logits' soft-cap. An
// inconsistent value is a *loader.FormatError naming the key.
func ggufGemma3(g *loader.GGUF, arch string, c *Config) error {
	key := func(k string) string { return "metadata " + arch + "." + k }
	bad := func(k string, v any, reason string) error {
		return &loader.FormatError{File: g.File, Field: key(k), Offset: -1,
			Err: fmt.Errorf("%w: %w", loader.ErrCorrupt, &ConfigError{Field: arch + "." + k, Value: v, Reason: reason})}
	}
	c.QKNorm, c.RopeNeoX = true, true
	if v, ok := g.Int(arch + ".attention.value_length"); ok && int(v) != c.HeadDim {
		return bad("attention.value_length", v, fmt.Sprintf("differs from attention.key_length %d", c.HeadDim))
	}
	if c.Layers > MaxLayers {
		return bad("block_count", c.Layers, fmt.Sprintf("want at most %d", MaxLayers))
	}
	return ggufLocalGlobal(g, arch, c)
}

// ggufLocalGlobal reads the local/global keys gemma3 and gemma4 share:
// the local base and window, the soft-cap, linear RoPE scaling, and which
// layers are local.
func ggufLocalGlobal(g *loader.GGUF, arch string, c *Config) error {
	key := func(k string) string { return "metadata " + arch + "." + k }
	bad := func(k string, v any, reason string) error {
		return &loader.FormatError{File: g.File, Field: key(k), Offset: -1,
			Err: fmt.Errorf("%w: %w", loader.ErrCorrupt, &ConfigError{Field: arch + "." + k, Value: v, Reason: reason})}
	}
	c.RopeLocalTheta = 10000
	if v, ok := g.Float(arch + ".rope.freq_base_swa"); ok {
		c.RopeLocalTheta = v
	}
	if v, ok := g.Int(arch + ".attention.sliding_window"); ok {
		if v < 0 || v > MaxContext {
			return bad("attention.sliding_window", v, fmt.Sprintf("want 0..%d", MaxContext))
		}
		c.SlidingWindow = int(v)
	}
	if v, ok := g.Float(arch + ".final_logit_softcapping"); ok {
		c.FinalLogitSoftcap = v
	}
	if typ, ok := g.String(arch + ".rope.scaling.type"); ok && typ != "none" {
		if typ != RopeLinear {
			return &loader.FormatError{File: g.File, Field: key("rope.scaling.type"), Offset: -1,
				Err: fmt.Errorf("%w: %q", loader.ErrUnsupported, typ)}
		}
		f, ok := g.Float(arch + ".rope.scaling.factor")
		if !ok {
			return &loader.FormatError{File: g.File, Field: key("rope.scaling.factor"), Offset: -1, Err: loader.ErrNotFound}
		}
		if f != 1 {
			c.RopeScaling = &RopeScaling{Type: RopeLinear, Factor: f}
		}
	}
	if c.SlidingWindow == 0 {
		return nil // every layer global
	}
	local := make([]bool, c.Layers)
	meta := g.Meta[arch+".attention.sliding_window_pattern"]
	if flags, ok := meta.([]bool); ok {
		if len(flags) < c.Layers {
			return bad("attention.sliding_window_pattern", len(flags), fmt.Sprintf("want a flag for each of the %d layers", c.Layers))
		}
		copy(local, flags)
	} else {
		period := int64(6)
		if meta != nil {
			v, ok := g.Int(arch + ".attention.sliding_window_pattern")
			if !ok || v < 0 || v > MaxLayers {
				return bad("attention.sliding_window_pattern", meta, "want a period or one bool per layer")
			}
			period = v
		}
		for l := range local {
			// llama.cpp's set_swa_pattern: period 0 makes every layer local.
			local[l] = period == 0 || int64(l)%period < period-1
		}
	}
	c.LayerTypes = make([]string, c.Layers)
	for l := range local {
		c.LayerTypes[l] = LayerFullAttention
		if local[l] {
			c.LayerTypes[l] = LayerSlidingAttention
		}
	}
	return nil
}

// ggufGemmaKeys are gemma3's GGUF keys (after "ARCH.") of the Gemma
// config fields.
var ggufGemmaKeys = map[string]string{
	"rope_local_base_freq":        "rope.freq_base_swa",
	"final_logit_softcapping":     "final_logit_softcapping",
	"sliding_window":              "attention.sliding_window",
	"layer_types":                 "attention.sliding_window_pattern",
	"rope_scaling.factor":         "rope.scaling.factor",
	"head_dim_swa":                "attention.key_length_swa",
	"layer_intermediate_sizes":    "feed_forward_length",
	"num_kv_shared_layers":        "attention.shared_kv_layers",
	"hidden_size_per_layer_input": "embedding_length_per_layer_input",
}

// ggufGemma3Tensors are llama.cpp's gemma3 names: the common table with
// the sandwich norms, and q's norm carrying the 27B's attention scale
// (gemma3QNorm).
var ggufGemma3Tensors = func() tensorTable {
	t := maps.Clone(ggufTensors)
	t[NameQNorm] = withConfig(gemma3QNorm, "blk.%d.attn_q_norm.weight")
	t[NamePostAttnNorm] = one("blk.%d.post_attention_norm.weight")
	t[NamePostFFNNorm] = one("blk.%d.post_ffw_norm.weight")
	return t
}()

// gemma3QNorm is a gemma3 layer's q norm weight. llama.cpp scales the
// queries of a 62-layer gemma3 (27B, Hugging Face's query_pre_attn_scalar
// 168 = D/H) by 1/sqrt(D/H) instead of 1/sqrt(Dh); Attend scales by
// 1/sqrt(Dh), so that model's weight is multiplied by sqrt(Dh/(D/H)) here
// (q is RMS-normed, so the factor passes through to the scores). Other
// layer counts keep the stored weight.
func gemma3QNorm(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	p := parts[0]
	if c.Layers != 62 || c.Heads <= 0 || c.Hidden%c.Heads != 0 {
		return p, nil
	}
	v, err := p.F32()
	if err != nil {
		return nil, err
	}
	f := float32(math.Sqrt(float64(c.HeadDim) * float64(c.Heads) / float64(c.Hidden)))
	out := make([]float32, len(v))
	for i, w := range v {
		out[i] = w * f
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: slices.Clone(p.Shape), Data: f32Bytes(out)}, nil
}
