package model

import (
	"fmt"
	"slices"
)

// MaxConvKernel bounds a Gated DeltaNet layer's causal conv kernel (4 in
// every Qwen3.5).
const MaxConvKernel = 64

// validateHybrid checks the fields of the hybrid families (layer types,
// the output gate, partial and sectioned RoPE, the Gated DeltaNet sizes,
// the shared expert) against the family's row. Errors are *ConfigError.
func (c *Config) validateHybrid(fam *Family) error {
	if c.LayerTypes != nil {
		if len(c.LayerTypes) != c.Layers {
			return &ConfigError{"layer_types", len(c.LayerTypes), fmt.Sprintf("want one type per layer (%d)", c.Layers)}
		}
		for l, typ := range c.LayerTypes {
			if typ == LayerSlidingAttention && fam.Attention.LocalGlobal {
				continue
			}
			if typ != LayerFullAttention && typ != LayerLinearAttention {
				return &ConfigError{fmt.Sprintf("layer_types[%d]", l), typ, "want full_attention or linear_attention (or sliding_attention where the family has local layers)"}
			}
		}
	}
	if c.Hybrid() && !fam.DeltaNet {
		return &ConfigError{"layer_types", c.LayerTypes, fmt.Sprintf("architecture %s has no linear attention layers", c.Arch)}
	}
	if fam.DeltaNet && c.LayerTypes == nil {
		return &ConfigError{"layer_types", nil, fmt.Sprintf("architecture %s needs each layer's type", c.Arch)}
	}
	if c.AttnOutputGate && !fam.Attention.OutputGate {
		return &ConfigError{"attn_output_gate", true, fmt.Sprintf("architecture %s has no attention output gate", c.Arch)}
	}
	if c.RopeDim != 0 && (c.RopeDim < 2 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0) {
		return &ConfigError{"rope_dim", c.RopeDim, fmt.Sprintf("want an even value in 2..head_dim %d", c.HeadDim)}
	}
	if c.RopeSections != nil {
		if len(c.RopeSections) != 4 {
			return &ConfigError{"rope_sections", c.RopeSections, "want 4 sections"}
		}
		if slices.ContainsFunc(c.RopeSections, func(s int) bool { return s < 0 || s > MaxHeadDim }) || sum(c.RopeSections) == 0 {
			return &ConfigError{"rope_sections", c.RopeSections, fmt.Sprintf("want sections in 0..%d, not all zero", MaxHeadDim)}
		}
	}
	if c.SharedExpertFFN != 0 {
		if !fam.SharedExpert {
			return &ConfigError{"shared_expert_intermediate_size", c.SharedExpertFFN, fmt.Sprintf("architecture %s has no shared expert", c.Arch)}
		}
		if c.SharedExpertFFN < 0 || c.SharedExpertFFN > MaxFFN {
			return &ConfigError{"shared_expert_intermediate_size", c.SharedExpertFFN, fmt.Sprintf("want 0..%d", MaxFFN)}
		}
	}
	if !c.Hybrid() {
		return nil
	}
	in := func(field string, v, lo, hi int) error {
		if v < lo || v > hi {
			return &ConfigError{field, v, fmt.Sprintf("want %d..%d", lo, hi)}
		}
		return nil
	}
	for _, err := range []error{
		in("linear_conv_kernel_dim", c.LinearConvKernel, 1, MaxConvKernel),
		in("linear_num_key_heads", c.LinearKeyHeads, 1, MaxHeads),
		in("linear_num_value_heads", c.LinearValueHeads, 1, MaxHeads),
		in("linear_key_head_dim", c.LinearHeadDim, 1, MaxHeadDim),
	} {
		if err != nil {
			return err
		}
	}
	if c.LinearValueHeads%c.LinearKeyHeads != 0 {
		return &ConfigError{"linear_num_value_heads", c.LinearValueHeads, fmt.Sprintf("not a multiple of linear_num_key_heads %d", c.LinearKeyHeads)}
	}
	return nil
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

// DeltaNetSpec is a Gated DeltaNet layer's sizes: n_k key heads and n_v
// value heads (value head j reads key head j mod n_k) of S dims each, and
// the causal conv's kernel.
type DeltaNetSpec struct {
	KeyHeads, ValueHeads, HeadDim, ConvKernel int
}

// ConvDim is the channels of the conv: q, k (n_k·S each) and v (n_v·S).
func (d DeltaNetSpec) ConvDim() int { return (2*d.KeyHeads + d.ValueHeads) * d.HeadDim }

// Inner is d_inner = n_v·S, the width of v, z and the output.
func (d DeltaNetSpec) Inner() int { return d.ValueHeads * d.HeadDim }

// ProjWidth is the merged input projection's rows: [q k v | z | beta |
// alpha] (ConvDim + Inner + 2·n_v).
func (d DeltaNetSpec) ProjWidth() int { return d.ConvDim() + d.Inner() + 2*d.ValueHeads }

// ConvStateLen is the floats of the conv state: the last ConvKernel-1
// rows of q, k, v before the conv.
func (d DeltaNetSpec) ConvStateLen() int { return (d.ConvKernel - 1) * d.ConvDim() }

// StateLen is the floats of the recurrent state: n_v matrices S × S.
func (d DeltaNetSpec) StateLen() int { return d.ValueHeads * d.HeadDim * d.HeadDim }

// deltaNetSpec is the config's Gated DeltaNet layer.
func (c *Config) deltaNetSpec() DeltaNetSpec {
	return DeltaNetSpec{KeyHeads: c.LinearKeyHeads, ValueHeads: c.LinearValueHeads, HeadDim: c.LinearHeadDim, ConvKernel: c.LinearConvKernel}
}
