package model

import (
	"fmt"
	"math"

	"wasmllm/loader"
)

// LongRoPE (Phi-3.5-mini, Phi-4-mini): each rotated pair's frequency is
// divided by a factor from one of two sets, short or long, and cos and sin
// are multiplied by an attention factor, sqrt(1 + ln(s)/ln(orig)) for
// s = max_position_embeddings / original_max_position_embeddings. The
// factors are the canonical tensors NameRopeFactorsShort and
// NameRopeFactorsLong (rope_dim/2 each, F32); the rest is
// Config.RopeScaling with Type RopeLongRoPE.

// RopeLongRoPE is RopeScaling.Type of a LongRoPE model.
const RopeLongRoPE = "longrope"

// The LongRoPE factor tensors.
const (
	NameRopeFactorsShort = "rope_factors_short.weight" // (rope_dim/2) LongRoPE's short factors
	NameRopeFactorsLong  = "rope_factors_long.weight"  // (rope_dim/2) LongRoPE's long factors
)

// MaxAttentionFactor bounds LongRoPE's attention factor (about 1.19 for
// the real models).
const MaxAttentionFactor = 16

// LongRoPEMode says how a LongRoPE model picks its factor set.
type LongRoPEMode int

const (
	// LongRoPEPerPass is Hugging Face's choice: each forward pass uses the
	// long factors iff its last position + 1 exceeds
	// original_max_position_embeddings (transformers'
	// longrope_frequency_update; seq_len = max(position_ids) + 1), the
	// short ones otherwise. Keys already in the cache keep the rotation
	// they were written with, as in transformers.
	LongRoPEPerPass LongRoPEMode = iota
	// LongRoPEPerContext is llama.cpp's choice: the long factors iff the
	// cache's capacity, rounded up to a multiple of 256 as llama.cpp
	// rounds its context, exceeds original_max_position_embeddings
	// (get_rope_factors), the same set for every pass over that cache.
	LongRoPEPerContext
	// LongRoPEShort and LongRoPELong use that set for every pass, the
	// choice of a caller that knows it (llama.cpp's for a context it
	// knows the size of).
	LongRoPEShort
	LongRoPELong
)

// LongRoPE reports whether the model's rotation is LongRoPE.
func (c *Config) LongRoPE() bool {
	return c.RopeScaling != nil && c.RopeScaling.Type == RopeLongRoPE
}

func longRoPE(c *Config) bool { return c.LongRoPE() }

// ropeHalf is the shape of a per-pair RoPE vector: (rope_dim/2).
func ropeHalf(c *Config) []int { return []int{c.ropeSpec().Dim / 2} }

// LongRoPEAttentionFactor is Hugging Face's default attention factor for
// a context of ctx positions trained from orig:
// sqrt(1 + ln(ctx/orig)/ln(orig)), 1 when ctx <= orig.
func LongRoPEAttentionFactor(ctx, orig int) float64 {
	s := float64(ctx) / float64(orig)
	if s <= 1 || orig <= 1 {
		return 1
	}
	return math.Sqrt(1 + math.Log(s)/math.Log(float64(orig)))
}

// validateLongRoPE checks a LongRoPE config. Errors are *ConfigError.
func (c *Config) validateLongRoPE() error {
	s := c.RopeScaling
	fam, ok := FamilyOf(c.Arch)
	switch {
	case !ok || !fam.Attention.LongRope:
		return &ConfigError{"rope_scaling.rope_type", s.Type, fmt.Sprintf("architecture %s has no LongRoPE", c.Arch)}
	case s.OriginalMaxPositionEmbeddings < 1 || s.OriginalMaxPositionEmbeddings > MaxContext:
		return &ConfigError{"rope_scaling.original_max_position_embeddings", s.OriginalMaxPositionEmbeddings, fmt.Sprintf("want 1..%d", MaxContext)}
	case !finite(s.AttentionFactor) || s.AttentionFactor <= 0 || s.AttentionFactor > MaxAttentionFactor:
		return &ConfigError{"rope_scaling.attention_factor", s.AttentionFactor, fmt.Sprintf("want a finite value in (0, %d]", MaxAttentionFactor)}
	case !finite(s.Factor) || s.Factor < 0 || s.Factor > 1e6:
		return &ConfigError{"rope_scaling.factor", s.Factor, "want a finite value in [0, 1e6]"}
	}
	return nil
}

// longRoPEFactors reads the two factor sets of w, checking them: finite
// and positive (a frequency is divided by its factor); a bad one is a
// *loader.FormatError naming the tensor, wrapping a *ConfigError.
func longRoPEFactors(w *Weights) (short, long []float32, err error) {
	read := func(name string) ([]float32, error) {
		t, err := w.Get(name)
		if err != nil {
			return nil, err
		}
		f, err := t.F32()
		if err != nil {
			return nil, err
		}
		for i, v := range f {
			if !finite(float64(v)) || v <= 0 {
				return nil, &loader.FormatError{File: w.Source, Field: "tensor " + name, Offset: -1,
					Err: fmt.Errorf("%w: %w", loader.ErrCorrupt, &ConfigError{name, v, fmt.Sprintf("factor %d: want a finite value > 0", i)})}
			}
		}
		return f, nil
	}
	if short, err = read(NameRopeFactorsShort); err != nil {
		return nil, nil, err
	}
	if long, err = read(NameRopeFactorsLong); err != nil {
		return nil, nil, err
	}
	return short, long, nil
}

// longRoPETables are a LongRoPE rotation's two tables: r's base
// frequencies divided by each factor set, cos and sin scaled by the
// attention factor.
func longRoPETables(r RopeSpec, attn float64, short, long []float32) (*RoPE, *RoPE) {
	return newRoPE(r, short, float32(attn)), newRoPE(r, long, float32(attn))
}

// useLongRoPE reports whether a pass at pos of T tokens over cache uses
// the long factors, as mode says.
func (m *Model) useLongRoPE(cache KVCache, pos, T int) bool {
	s := m.Config.RopeScaling
	if s == nil || s.Type != RopeLongRoPE {
		return false
	}
	orig := s.OriginalMaxPositionEmbeddings
	switch m.LongRoPE {
	case LongRoPEPerContext:
		return (cache.Capacity()+255)/256*256 > orig
	case LongRoPEShort:
		return false
	case LongRoPELong:
		return true
	}
	return max(pos+T, m.passEnd) > orig
}

// SetPassEnd says that the forwards that follow, until SetPassEnd(0), are
// chunks of one pass that ends at position end (exclusive): a prompt
// prefilled in chunks. Hugging Face runs a prompt in one pass, so with
// LongRoPEPerPass its chunks take the factor set of the whole prompt, not
// each its own. Other models ignore it.
func (m *Model) SetPassEnd(end int) { m.passEnd = end }
