package model

import (
	"fmt"
	"maps"

	"wasmllm/loader"
)

// ggufHybrid reads the keys of llama.cpp's qwen35 and qwen35moe (Qwen3.5,
// Qwen3.6) into c, after fromGGUF has read the common ones (Layers is
// block_count): the trunk without its NextN/MTP blocks, each layer's type,
// the gated attention's partial and sectioned RoPE, and the Gated DeltaNet
// sizes. An inconsistent value is a *loader.FormatError naming the key,
// wrapping a *ConfigError.
func ggufHybrid(g *loader.GGUF, arch string, c *Config) error {
	key := func(k string) string { return "metadata " + arch + "." + k }
	bad := func(k string, v any, reason string) error {
		return &loader.FormatError{File: g.File, Field: key(k), Offset: -1,
			Err: fmt.Errorf("%w: %w", loader.ErrCorrupt, &ConfigError{Field: arch + "." + k, Value: v, Reason: reason})}
	}
	num := func(k string, def int) (int, error) {
		v, ok := g.Int(arch + "." + k)
		if !ok {
			if def < 0 {
				return 0, &loader.FormatError{File: g.File, Field: key(k), Offset: -1, Err: loader.ErrNotFound}
			}
			return def, nil
		}
		if v < 0 || v > 1<<31 {
			return 0, bad(k, v, "out of range")
		}
		return int(v), nil
	}
	// The trunk: blocks at and past block_count - nextn_predict_layers are
	// NextN/MTP blocks the forward pass never runs.
	nextn, err := num("nextn_predict_layers", 0)
	if err != nil {
		return err
	}
	if nextn >= c.Layers {
		return bad("nextn_predict_layers", nextn, fmt.Sprintf("leaves no trunk layer of block_count %d", c.Layers))
	}
	c.Layers -= nextn
	c.mtpAvailable = nextn
	if v, ok := g.Int(arch + ".attention.value_length"); ok && int(v) != c.HeadDim {
		return bad("attention.value_length", v, fmt.Sprintf("differs from attention.key_length %d", c.HeadDim))
	}
	if c.RopeDim, err = num("rope.dimension_count", c.HeadDim); err != nil {
		return err
	}
	if c.RopeDim == c.HeadDim {
		c.RopeDim = 0
	}
	sec, ok := intArray(g.Meta[arch+".rope.dimension_sections"])
	if !ok {
		return &loader.FormatError{File: g.File, Field: key("rope.dimension_sections"), Offset: -1,
			Err: fmt.Errorf("%w: %w", loader.ErrNotFound, &ConfigError{Field: arch + ".rope.dimension_sections", Reason: "required (IMROPE sections)"})}
	}
	if len(sec) > 4 {
		return bad("rope.dimension_sections", sec, "more than 4 sections")
	}
	c.RopeSections = make([]int, 4)
	for i, s := range sec {
		if s < 0 || s > MaxHeadDim {
			return bad("rope.dimension_sections", sec, fmt.Sprintf("want sections in 0..%d", MaxHeadDim))
		}
		c.RopeSections[i] = int(s)
	}
	S, err := num("ssm.state_size", -1)
	if err != nil {
		return err
	}
	nk, err := num("ssm.group_count", -1)
	if err != nil {
		return err
	}
	nv, err := num("ssm.time_step_rank", -1)
	if err != nil {
		return err
	}
	inner, err := num("ssm.inner_size", -1)
	if err != nil {
		return err
	}
	conv, err := num("ssm.conv_kernel", -1)
	if err != nil {
		return err
	}
	switch {
	case S == 0:
		return bad("ssm.state_size", S, "zero")
	case nk == 0:
		return bad("ssm.group_count", nk, "zero")
	case nv%nk != 0 || nv == 0:
		return bad("ssm.time_step_rank", nv, fmt.Sprintf("not a positive multiple of ssm.group_count %d", nk))
	case int64(inner) != int64(S)*int64(nv):
		return bad("ssm.inner_size", inner, fmt.Sprintf("differs from ssm.state_size %d × ssm.time_step_rank %d", S, nv))
	case conv == 0:
		return bad("ssm.conv_kernel", conv, "zero")
	}
	c.LinearHeadDim, c.LinearKeyHeads, c.LinearValueHeads, c.LinearConvKernel = S, nk, nv, conv
	if c.Layers > MaxLayers {
		return bad("block_count", c.Layers, fmt.Sprintf("want at most %d", MaxLayers))
	}
	c.LayerTypes = make([]string, c.Layers)
	if rec, ok := g.Meta[arch+".attention.recurrent_layers"].([]bool); ok {
		if len(rec) < c.Layers {
			return bad("attention.recurrent_layers", len(rec), fmt.Sprintf("want a flag for each of the %d trunk layers", c.Layers))
		}
		for l := range c.LayerTypes {
			c.LayerTypes[l] = LayerFullAttention
			if rec[l] {
				c.LayerTypes[l] = LayerLinearAttention
			}
		}
	} else {
		every, err := num("full_attention_interval", 4)
		if err != nil {
			return err
		}
		if every == 0 {
			return bad("full_attention_interval", every, "zero")
		}
		for l := range c.LayerTypes {
			c.LayerTypes[l] = LayerLinearAttention
			if (l+1)%every == 0 {
				c.LayerTypes[l] = LayerFullAttention
			}
		}
	}
	if arch == ArchQwen35MoE {
		if c.SharedExpertFFN, err = num("expert_shared_feed_forward_length", 0); err != nil {
			return err
		}
	}
	return nil
}

// intArray reads an integer-array metadata value of any integer type.
func intArray(v any) ([]int64, bool) {
	var out []int64
	add := func(n int, at func(i int) int64) []int64 {
		out = make([]int64, n)
		for i := range out {
			out[i] = at(i)
		}
		return out
	}
	switch a := v.(type) {
	case []int32:
		return add(len(a), func(i int) int64 { return int64(a[i]) }), true
	case []uint32:
		return add(len(a), func(i int) int64 { return int64(a[i]) }), true
	case []int64:
		return add(len(a), func(i int) int64 { return a[i] }), true
	case []uint64:
		return add(len(a), func(i int) int64 { return int64(min(a[i], 1<<62)) }), true
	case []int16:
		return add(len(a), func(i int) int64 { return int64(a[i]) }), true
	case []uint16:
		return add(len(a), func(i int) int64 { return int64(a[i]) }), true
	case []int8:
		return add(len(a), func(i int) int64 { return int64(a[i]) }), true
	case []uint8:
		return add(len(a), func(i int) int64 { return int64(a[i]) }), true
	}
	return nil, false
}

// ggufHybridKeys are the GGUF keys of the hybrid families' canonical
// Config fields.
var ggufHybridKeys = map[string]string{
	"linear_conv_kernel_dim":          "ssm.conv_kernel",
	"linear_num_key_heads":            "ssm.group_count",
	"linear_num_value_heads":          "ssm.time_step_rank",
	"linear_key_head_dim":             "ssm.state_size",
	"rope_dim":                        "rope.dimension_count",
	"rope_sections":                   "rope.dimension_sections",
	"layer_types":                     "full_attention_interval",
	"shared_expert_intermediate_size": "expert_shared_feed_forward_length",
}

// ggufQwen35Tensors are llama.cpp's qwen35/qwen35moe names: the common
// table, with the pre-FFN norm named post_attention_norm, the gated q
// projection reordered (gatedQKV), the Gated DeltaNet's projections merged
// into ssm_in, and the shared expert.
var ggufQwen35Tensors = func() tensorTable {
	t := maps.Clone(ggufTensors)
	t[NameFFNNorm] = one("blk.%d.post_attention_norm.weight")
	t[NameQKV] = withConfig(gatedQKV, "blk.%d.attn_q.weight", "blk.%d.attn_k.weight", "blk.%d.attn_v.weight")
	t[NameSSMIn] = rows("blk.%d.attn_qkv.weight", "blk.%d.attn_gate.weight", "blk.%d.ssm_beta.weight", "blk.%d.ssm_alpha.weight")
	t[NameSSMConv] = one("blk.%d.ssm_conv1d.weight")
	t[NameSSMA] = one("blk.%d.ssm_a")
	t[NameSSMDtBias] = one("blk.%d.ssm_dt.bias")
	t[NameSSMNorm] = one("blk.%d.ssm_norm.weight")
	t[NameSSMOut] = one("blk.%d.ssm_out.weight")
	t[NameGateUpShexp] = rows("blk.%d.ffn_gate_shexp.weight", "blk.%d.ffn_up_shexp.weight")
	t[NameDownShexp] = one("blk.%d.ffn_down_shexp.weight")
	t[NameGateShexp] = withConfig(vector, "blk.%d.ffn_gate_inp_shexp.weight")
	t[NameMTPEHProj] = one(NameMTPEHProj)
	t[NameMTPENorm] = one(NameMTPENorm)
	t[NameMTPHNorm] = one(NameMTPHNorm)
	t[NameMTPHeadNorm] = one(NameMTPHeadNorm)
	return t
}()

// ggufTable is arch's table of GGUF names.
func ggufTable(arch string) tensorTable {
	switch arch {
	case ArchQwen35, ArchQwen35MoE:
		return ggufQwen35Tensors
	case ArchPhi3:
		return ggufPhi3Tensors
	case ArchGemma3:
		return ggufGemma3Tensors
	case ArchGemma4:
		return ggufGemma4Tensors
	}
	return ggufTensors
}
