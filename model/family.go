package model

import (
	"fmt"
	"math"
)

// The family table: each supported architecture is a row that says which
// kinds its layers are made of. A layer is a token mixer (across positions)
// then a channel mixer (across features), each reading the residual stream
// through its own RMSNorm and adding its output back (pre-norm blocks).
// Adding a family is a row here, plus a new kind (with its plain-loop
// reference in package cpu and its backend ops) where it needs new math.
// Per-layer parameters are the spec's (AttentionSpec, ChannelSpec): a
// family whose layers differ (local and global attention, their own RoPE
// bases and head sizes) fills them per layer in Specs. What the families
// of the next issues need beyond these (an output gate, KV shared from
// another layer, bidirectional attention, sandwich norms, an embedding
// scale, logit soft-capping, recurrent mixers) arrives as new fields and
// kinds with the kernels that run them, not before.
//
//	family    token mixer                                   channel mixer
//	llama     attention: GQA, RoPE (llama3 scaling, GGUF    gated MLP (SiLU)
//	          rope_freqs), optional q/k/v biases,
//	          sliding window (Mistral)
//	qwen2     attention + q/k/v biases, sliding window      gated MLP (SiLU)
//	qwen3     attention + q/k norm                          gated MLP (SiLU)
//	qwen3moe  attention + q/k norm                          MoE: top-k routed experts, renormalised

// Family is one row of the family table.
type Family struct {
	Arch string
	// Attention is the feature set of the family's attention layers; a
	// config of the family may only ask for these.
	Attention AttentionFeatures
	// Channel is the channel mixer of every layer.
	Channel ChannelKind
}

// AttentionFeatures are the optional parts of an attention layer a family
// has.
type AttentionFeatures struct {
	QKNorm        bool // per-head RMSNorm of queries and keys (Qwen3)
	Bias          bool // q/k/v biases before RoPE (Qwen2)
	SlidingWindow bool // a sliding window may be configured (Mistral, Qwen2)
}

// ChannelKind names a channel mixer.
type ChannelKind string

// The channel mixers.
const (
	// ChannelGatedMLP is vLLM's LlamaMLP: merged gate_up, SiluAndMul, down.
	ChannelGatedMLP ChannelKind = "gated_mlp"
	// ChannelMoE is Qwen3-MoE's sparse block: a router, the top-A of E
	// experts (each a gated MLP), no shared expert.
	ChannelMoE ChannelKind = "moe"
)

// Families is the family table.
var Families = []Family{
	{Arch: ArchLlama, Attention: AttentionFeatures{Bias: true, SlidingWindow: true}, Channel: ChannelGatedMLP},
	{Arch: ArchQwen2, Attention: AttentionFeatures{Bias: true, SlidingWindow: true}, Channel: ChannelGatedMLP},
	{Arch: ArchQwen3, Attention: AttentionFeatures{QKNorm: true}, Channel: ChannelGatedMLP},
	{Arch: ArchQwen3MoE, Attention: AttentionFeatures{QKNorm: true}, Channel: ChannelMoE},
}

// FamilyOf returns arch's row of the family table.
func FamilyOf(arch string) (*Family, bool) {
	for i := range Families {
		if Families[i].Arch == arch {
			return &Families[i], true
		}
	}
	return nil, false
}

// LayerSpec is one layer's kinds and parameters, chosen at load from the
// family and the config.
type LayerSpec struct {
	Attention AttentionSpec
	Channel   ChannelSpec
}

// AttentionSpec is an attention layer's parameters.
type AttentionSpec struct {
	Heads, KVHeads, HeadDim int      // H, Hk, Dh
	Window                  int      // sliding window; 0: every position
	QKNorm                  bool     // q/k norm weights
	Bias                    bool     // q/k/v biases
	Rope                    RopeSpec // the layer's rotation
}

// RopeSpec is an attention layer's rotary embedding: layers of one model
// may differ (Gemma's local and global layers have their own bases), and
// each distinct spec gets one frequency table.
type RopeSpec struct {
	Theta   float64      // the base
	Scaling *RopeScaling // llama3's; nil: none
	Dim     int          // rotated dims per head (Dh for every family here)
	NeoX    bool         // rotate halves; false: adjacent pairs
}

// InvFreq returns the Dim/2 inverse frequencies: theta^(-2i/Dim), with
// llama3 scaling applied when configured (as in Hugging Face's
// _compute_llama3_parameters).
func (r RopeSpec) InvFreq() []float32 {
	out := make([]float32, r.Dim/2)
	for i := range out {
		f := 1 / math.Pow(r.Theta, float64(2*i)/float64(r.Dim))
		if s := r.Scaling; s != nil {
			f = llama3Scale(f, s)
		}
		out[i] = float32(f)
	}
	return out
}

// ChannelSpec is a channel mixer's kind and parameters.
type ChannelSpec struct {
	Kind        ChannelKind
	FFN         int  // F: the gated MLP's, or each expert's, intermediate size
	Experts     int  // E (MoE)
	ExpertsUsed int  // A (MoE)
	NormTopK    bool // renormalise the top-A weights to sum 1 (MoE)
}

// Specs gives each layer's spec: the family's kinds with the config's
// parameters. For a config of no family (which Validate refuses), the
// channel mixer is MoE when it has experts.
func (c *Config) Specs() []LayerSpec {
	channel := ChannelGatedMLP
	if fam, ok := FamilyOf(c.Arch); ok {
		channel = fam.Channel
	} else if c.MoE() {
		channel = ChannelMoE
	}
	specs := make([]LayerSpec, max(c.Layers, 0))
	for l := range specs {
		specs[l] = LayerSpec{
			Attention: AttentionSpec{Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
				Window: c.SlidingWindow, QKNorm: c.QKNorm, Bias: c.QKVBias, Rope: c.ropeSpec()},
			Channel: ChannelSpec{Kind: channel, FFN: c.FFN},
		}
		if channel == ChannelMoE {
			specs[l].Channel = ChannelSpec{Kind: ChannelMoE, FFN: c.ExpertFFN, Experts: c.Experts,
				ExpertsUsed: c.ExpertsUsed, NormTopK: c.NormTopK}
		}
	}
	return specs
}

// checkFamily checks that the config asks only for what its family's
// layers have.
func (c *Config) checkFamily() error {
	fam, ok := FamilyOf(c.Arch)
	if !ok {
		return &ConfigError{"arch", c.Arch, "unsupported architecture"}
	}
	a := fam.Attention
	switch {
	case c.QKNorm && !a.QKNorm:
		return &ConfigError{"qk_norm", c.QKNorm, fmt.Sprintf("architecture %s has no q/k norm", c.Arch)}
	case c.QKVBias && !a.Bias:
		return &ConfigError{"attention_bias", c.QKVBias, fmt.Sprintf("architecture %s has no q/k/v biases", c.Arch)}
	case c.SlidingWindow > 0 && !a.SlidingWindow:
		return &ConfigError{"sliding_window", c.SlidingWindow, fmt.Sprintf("architecture %s has no sliding window", c.Arch)}
	case (fam.Channel == ChannelMoE) != c.MoE():
		return &ConfigError{"num_experts", c.Experts, fmt.Sprintf("architecture %s's channel mixer is %s", c.Arch, fam.Channel)}
	}
	return nil
}
