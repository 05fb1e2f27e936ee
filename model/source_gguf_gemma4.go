package model

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"wasmllm/loader"
)

// ggufGemma4 reads the keys of llama.cpp's gemma4 into c, after fromGGUF
// has read the common ones (attention.key_length is the global layers'
// head dim): the local layers' head dim, base and window, which layers are
// local (attention.sliding_window_pattern, one bool per layer, true =
// local), the per-layer FFN widths (feed_forward_length, a u32 or one
// per layer), the shared-KV layers, the per-layer embeddings' width and
// the soft-cap, the KV-head counts (a u32 or one per layer) and the MoE's
// experts (26B-A4B). An inconsistent value is a *loader.FormatError naming
// the key.
func ggufGemma4(g *loader.GGUF, arch string, c *Config) error {
	key := func(k string) string { return "metadata " + arch + "." + k }
	bad := func(k string, v any, reason string) error {
		return &loader.FormatError{File: g.File, Field: key(k), Offset: -1,
			Err: fmt.Errorf("%w: %w", loader.ErrCorrupt, &ConfigError{Field: arch + "." + k, Value: v, Reason: reason})}
	}
	c.RopeNeoX = true
	if c.Layers > MaxLayers {
		return bad("block_count", c.Layers, fmt.Sprintf("want at most %d", MaxLayers))
	}
	if v, ok := g.Int(arch + ".attention.value_length"); ok && int(v) != c.HeadDim {
		return bad("attention.value_length", v, fmt.Sprintf("differs from attention.key_length %d", c.HeadDim))
	}
	num := func(k string, def int) (int, error) {
		v, ok := g.Int(arch + "." + k)
		if !ok {
			return def, nil
		}
		if v < 0 || v > 1<<31 {
			return 0, bad(k, v, "out of range")
		}
		return int(v), nil
	}
	var err error
	if c.HeadDimSWA, err = num("attention.key_length_swa", c.HeadDim); err != nil {
		return err
	}
	if v, ok := g.Int(arch + ".attention.value_length_swa"); ok && int(v) != c.HeadDimSWA {
		return bad("attention.value_length_swa", v, fmt.Sprintf("differs from attention.key_length_swa %d", c.HeadDimSWA))
	}
	for _, k := range []struct {
		name string
		want int
	}{{"rope.dimension_count", c.HeadDim}, {"rope.dimension_count_swa", c.HeadDimSWA}} {
		if v, ok := g.Int(arch + "." + k.name); ok && int(v) != k.want {
			return &loader.FormatError{File: g.File, Field: key(k.name), Offset: -1,
				Err: fmt.Errorf("%w: partial rotary %d of %d (rope_freqs carries Gemma 4's)", loader.ErrUnsupported, v, k.want)}
		}
	}
	if c.SharedKVLayers, err = num("attention.shared_kv_layers", 0); err != nil {
		return err
	}
	if c.PerLayerInput, err = num("embedding_length_per_layer_input", 0); err != nil {
		return err
	}
	if ffn, ok := intArray(g.Meta[arch+".feed_forward_length"]); ok {
		if len(ffn) != c.Layers {
			return bad("feed_forward_length", len(ffn), fmt.Sprintf("want one size per layer (%d)", c.Layers))
		}
		c.LayerFFN = make([]int, len(ffn))
		for l, f := range ffn {
			if f < 1 || f > MaxFFN {
				return bad("feed_forward_length", f, fmt.Sprintf("want 1..%d", MaxFFN))
			}
			c.LayerFFN[l] = int(f)
		}
		c.FFN = slices.Max(c.LayerFFN)
		if !slices.ContainsFunc(c.LayerFFN, func(f int) bool { return f != c.FFN }) {
			c.LayerFFN = nil
		}
	}
	if kv, ok := intArray(g.Meta[arch+".attention.head_count_kv"]); ok {
		if len(kv) != c.Layers {
			return bad("attention.head_count_kv", len(kv), fmt.Sprintf("want one count per layer (%d)", c.Layers))
		}
		c.LayerKVHeads = make([]int, len(kv))
		for l, h := range kv {
			if h < 1 || h > int64(max(c.Heads, 1)) {
				return bad("attention.head_count_kv", h, fmt.Sprintf("want 1..%d", c.Heads))
			}
			c.LayerKVHeads[l] = int(h)
		}
		c.KVHeads = slices.Max(c.LayerKVHeads)
		if !slices.ContainsFunc(c.LayerKVHeads, func(h int) bool { return h != c.KVHeads }) {
			c.LayerKVHeads = nil
		}
	}
	// The MoE (26B-A4B): experts beside the dense MLP, their top-k
	// weights renormalised (llama.cpp's gemma4 always does).
	if _, ok := g.Meta[arch+".expert_count"]; ok {
		for _, k := range []struct {
			name string
			dst  *int
		}{{"expert_count", &c.Experts}, {"expert_used_count", &c.ExpertsUsed}, {"expert_feed_forward_length", &c.ExpertFFN}} {
			if *k.dst, err = num(k.name, 0); err != nil {
				return err
			}
		}
		c.NormTopK = true
	}
	// The local layers, base, window and soft-cap are read as gemma3's.
	return ggufLocalGlobal(g, arch, c)
}

// ggufGemma4Tensors are llama.cpp's gemma4 names: gemma3's, with q/k/v
// (or q alone, on a layer that shares KV) and their norms merged by
// layer, and the per-layer input's tensors.
var ggufGemma4Tensors = func() tensorTable {
	t := maps.Clone(ggufGemma3Tensors)
	// A shared-KV layer has no attn_k: its row is q alone.
	// A global layer of attention_k_eq_v (26B-A4B, 31B) has no attn_v:
	// its values are attn_k's projection, so k's rows are repeated.
	t[NameQKV] = either(withConfig(qkvFromVKQ, "blk.%d.attn_v.weight", "blk.%d.attn_k.weight", "blk.%d.attn_q.weight"),
		either(withConfig(qkvFromKQ, "blk.%d.attn_k.weight", "blk.%d.attn_q.weight"), one("blk.%d.attn_q.weight")))
	// The MoE beside the dense MLP: gate_up_exps fused as stored (gate
	// rows first), the router's input weight scale/sqrt(D).
	t[NameGateUpExps] = one("blk.%d.ffn_gate_up_exps.weight")
	t[NamePreFFNNorm2] = one("blk.%d.pre_ffw_norm_2.weight")
	t[NameRouterNorm] = withConfig(routerNorm, "blk.%d.ffn_gate_inp.scale")
	t[NameExpertScale] = one("blk.%d.ffn_down_exps.scale")
	t[NamePostFFNNorm1] = one("blk.%d.post_ffw_norm_1.weight")
	t[NamePostFFNNorm2] = one("blk.%d.post_ffw_norm_2.weight")
	t[NameQKVNorm] = either(withConfig(qkvNormMerge, "blk.%d.attn_k_norm.weight", "blk.%d.attn_q_norm.weight"),
		withConfig(qkvNormMerge, "blk.%d.attn_q_norm.weight"))
	delete(t, NameQNorm)
	delete(t, NameKNorm)
	t[NamePLEmbed] = one("per_layer_token_embd.weight")
	t[NamePLProj] = one("per_layer_model_proj.weight")
	t[NamePLNorm] = withConfig(tiledNorm, "per_layer_proj_norm.weight")
	t[NamePLGate] = one("blk.%d.inp_gate.weight")
	t[NamePLOut] = one("blk.%d.proj.weight")
	t[NamePLPostNorm] = one("blk.%d.post_norm.weight")
	t[NameLayerScale] = withConfig(vector, "blk.%d.layer_output_scale.weight")
	return t
}()

// qkvFromVKQ merges a layer's attn_v, attn_k, attn_q (read in that order,
// so that a layer without attn_v takes the k = v row, and one without
// attn_k the q-only row) as q, k, v.
func qkvFromVKQ(_ *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	return stackRows(name, parts[2], parts[1], parts[0])
}

// qkvFromKQ merges an attention_k_eq_v layer's attn_k, attn_q as q, k, k:
// the values are the keys' projection (normed as values, without
// weight, and not rotated).
func qkvFromKQ(_ *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	return stackRows(name, parts[1], parts[0], parts[0])
}

// routerNorm is NameRouterNorm: ffn_gate_inp.scale (D) over sqrt(D), the
// router input's weight (llama.cpp: RMSNorm without weight, times
// 1/sqrt(n_embd), times the scale).
func routerNorm(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	p := parts[0]
	if p.NumElements() != c.Hidden {
		return nil, fmt.Errorf("%s: %s has %d values, want %d", name, p.Name, p.NumElements(), c.Hidden)
	}
	v, err := p.F32()
	if err != nil {
		return nil, err
	}
	s := float32(1 / math.Sqrt(float64(c.Hidden)))
	w := make([]float32, len(v))
	for i, x := range v {
		w[i] = x * s
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{len(w)}, Data: f32Bytes(w)}, nil
}

// layerOf is the layer index of a per-layer canonical name.
func layerOf(name string) (int, error) {
	var l int
	if _, err := fmt.Sscanf(name, "blk.%d.", &l); err != nil {
		return 0, fmt.Errorf("%s: no layer index", name)
	}
	return l, nil
}

// qkvNormMerge makes NameQKVNorm (gemma4QKVNorm) from a layer's k_norm
// and q_norm, or q_norm alone on a layer that shares KV.
func qkvNormMerge(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	l, err := layerOf(name)
	if err != nil {
		return nil, err
	}
	specs := c.Specs()
	if l >= len(specs) {
		return nil, fmt.Errorf("%s: layer %d of %d", name, l, len(specs))
	}
	a := specs[l].Attention
	if (len(parts) == 1) != a.SharesKV {
		return nil, fmt.Errorf("%s: layer %d: k_norm present %v, but it shares KV %v", name, l, len(parts) == 2, a.SharesKV)
	}
	vals := make([][]float32, len(parts))
	for i, p := range parts {
		if p.NumElements() != a.HeadDim {
			return nil, fmt.Errorf("%s: %s has %d values, want head_dim %d", name, p.Name, p.NumElements(), a.HeadDim)
		}
		if vals[i], err = p.F32(); err != nil {
			return nil, err
		}
	}
	q, k := vals[len(vals)-1], []float32(nil)
	if len(vals) == 2 {
		k = vals[0]
	}
	w := gemma4QKVNorm(&a, q, k)
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{len(w)}, Data: f32Bytes(w)}, nil
}

// tiledNorm repeats a (P) norm weight once per layer: (L*P).
func tiledNorm(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	p := parts[0]
	if p.NumElements() != c.PerLayerInput {
		return nil, fmt.Errorf("%s: %s has %d values, want %d", name, p.Name, p.NumElements(), c.PerLayerInput)
	}
	v, err := p.F32()
	if err != nil {
		return nil, err
	}
	w := make([]float32, 0, c.Layers*len(v))
	for range c.Layers {
		w = append(w, v...)
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{len(w)}, Data: f32Bytes(w)}, nil
}
