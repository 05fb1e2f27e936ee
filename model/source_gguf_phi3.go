package model

import (
	"fmt"
	"maps"

	"wasmllm/loader"
)

// ArchPhi3 is llama.cpp's phi3: Phi-3, Phi-3.5-mini, Phi-4-mini and Phi-4
// (a Llama layout with fused qkv and gate_up, partial NEOX rotary and
// LongRoPE).
const ArchPhi3 = "phi3"

var phi3Attention = AttentionFeatures{PartialRope: true, LongRope: true}

// ggufPhi3Tensors are the GGUF names of a phi3 file: attn_qkv is stored
// fused (q, k, v rows, as the canonical tensor; separate attn_q/k/v are
// read too, as llama.cpp does), and ffn_up holds gate_up (the gate's rows
// first, as the canonical tensor). The LongRoPE factors are one pair for
// every layer.
var ggufPhi3Tensors = func() tensorTable {
	t := maps.Clone(ggufTensors)
	t[NameQKV] = either(one("blk.%d.attn_qkv.weight"), rows("blk.%d.attn_q.weight", "blk.%d.attn_k.weight", "blk.%d.attn_v.weight"))
	t[NameGateUp] = one("blk.%d.ffn_up.weight")
	t[NameRopeFactorsShort] = one("rope_factors_short.weight")
	t[NameRopeFactorsLong] = one("rope_factors_long.weight")
	delete(t, NameQKVBias)
	return t
}()

// ggufPhi3 reads a phi3 file's rotation: NEOX over rope.dimension_count
// dims of each head, and LongRoPE when the file has the factor tensors.
// The converter (Phi3MiniModel) writes no rope.scaling.type: LongRoPE is
// the factor tensors, rope.scaling.original_context_length and
// rope.scaling.attn_factor (Hugging Face's default,
// LongRoPEAttentionFactor, when absent). attention.sliding_window is
// ignored, as llama.cpp ignores it for phi3 (every layer attends to every
// position).
func ggufPhi3(g *loader.GGUF, src tensorSource, c *Config) error {
	const arch = ArchPhi3
	ferr := func(key string, err error) error {
		return &loader.FormatError{File: g.File, Field: "metadata " + arch + "." + key, Offset: -1, Err: err}
	}
	c.RopeNeoX = true
	if v, ok := g.Int(arch + ".rope.dimension_count"); ok {
		if v < 2 || v > int64(c.HeadDim) || v%2 != 0 {
			return ferr("rope.dimension_count", fmt.Errorf("%w: %d, want an even value in 2..head_dim %d", loader.ErrCorrupt, v, c.HeadDim))
		}
		if int(v) != c.HeadDim {
			c.RopeDim = int(v)
		}
	}
	hasShort, hasLong := src.Has("rope_factors_short.weight"), src.Has("rope_factors_long.weight")
	if hasShort != hasLong {
		return &loader.FormatError{File: g.File, Field: "tensor rope_factors_long.weight", Offset: -1,
			Err: fmt.Errorf("%w: LongRoPE needs both factor tensors", loader.ErrCorrupt)}
	}
	if !hasShort {
		return nil
	}
	orig, ok := g.Int(arch + ".rope.scaling.original_context_length")
	if !ok {
		return ferr("rope.scaling.original_context_length", loader.ErrNotFound)
	}
	if orig < 1 || orig > MaxContext {
		return ferr("rope.scaling.original_context_length", fmt.Errorf("%w: %d", loader.ErrCorrupt, orig))
	}
	s := &RopeScaling{Type: RopeLongRoPE, OriginalMaxPositionEmbeddings: int(orig),
		Factor: float64(c.MaxContext) / float64(orig)}
	s.AttentionFactor = LongRoPEAttentionFactor(c.MaxContext, int(orig))
	if v, ok := g.Float(arch + ".rope.scaling.attn_factor"); ok {
		s.AttentionFactor = v
	}
	c.RopeScaling = s
	return nil
}
