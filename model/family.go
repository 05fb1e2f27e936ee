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
// bases and head sizes) fills them per layer in Specs; a hybrid family's
// layers mix token mixer kinds, as Config.LayerTypes says. Gemma 3 brought
// local and global attention layers (LocalGlobal), sandwich norms, the
// GeGLU channel mixer, the embedding scale and the logit soft-cap as kinds
// any family may name (family_gemma.go).
//
//	family     token mixer                                   channel mixer
//	llama      attention: GQA, RoPE (llama3 scaling, GGUF    gated MLP (SiLU)
//	           rope_freqs), optional q/k/v biases,
//	           sliding window (Mistral)
//	qwen2      attention + q/k/v biases, sliding window      gated MLP (SiLU)
//	qwen3      attention + q/k norm                          gated MLP (SiLU)
//	qwen3moe   attention + q/k norm                          MoE: top-k routed experts, renormalised
//	qwen35     Gated DeltaNet, or (every full_attention_     gated MLP (SiLU)
//	           interval-th layer) attention + q/k norm +
//	           output gate, partial NEOX RoPE (IMROPE
//	           sections: plain partial RoPE for text)
//	qwen35moe  as qwen35                                     MoE, renormalised, + a shared expert
//	                                                         with a sigmoid gate
//	phi3       attention: GQA, partial NEOX RoPE, LongRoPE   gated MLP (SiLU)
//	           (short/long factors, attention factor)
//	gemma3     attention + q/k norm, local (sliding window)  GeGLU (GELU-tanh); sandwich norms,
//	           and global layers with their own RoPE bases    the embedding ×sqrt(D), optional
//	           (linear scaling on the global ones)            logit soft-cap
//	gemma4     as gemma3: q/k/v norms in the projection's    GeGLU, per-layer widths; per-layer
//	           epilogue, own local head dim, shared KV,       embeddings, gated per-layer input,
//	           per-layer KV heads, k = v layers               layer output scale; with experts
//	           (family_gemma4.go)                             GeGLU beside a GeGLU MoE

// Family is one row of the family table.
type Family struct {
	Arch string
	// Attention is the feature set of the family's attention layers; a
	// config of the family may only ask for these.
	Attention AttentionFeatures
	// Channel is the channel mixer of every layer.
	Channel ChannelKind
	// DeltaNet: the family's layers may be Gated DeltaNet token mixers
	// (Config.LayerTypes).
	DeltaNet bool
	// SharedExpert: the MoE may have a shared expert.
	SharedExpert bool
	// EmbedScale: the token embedding is multiplied by sqrt(D) in f32
	// before the first layer (Gemma); the tied LM head reads the table
	// unscaled.
	EmbedScale bool
	// SoftCap: the logits may be soft-capped, c·tanh(logits/c)
	// (Config.FinalLogitSoftcap; Gemma).
	SoftCap bool
	// PerLayerInput: per-layer embeddings (Config.PerLayerInput), a
	// layer's gated input and its output scale (Gemma 4).
	PerLayerInput bool
	// MoEChannel, when set, is the channel mixer of every layer of a
	// config with experts, Channel that of one without (Gemma 4: the
	// 26B-A4B's GeGLU MoE beside its dense GeGLU, E2B's GeGLU alone).
	MoEChannel ChannelKind
}

// AttentionFeatures are the optional parts of an attention layer a family
// has.
type AttentionFeatures struct {
	QKNorm        bool // per-head RMSNorm of queries and keys (Qwen3)
	Bias          bool // q/k/v biases before RoPE (Qwen2)
	SlidingWindow bool // a sliding window may be configured (Mistral, Qwen2)
	OutputGate    bool // sigmoid(gate) on the output, the gate from the q projection (Qwen3.5)
	PartialRope   bool // RoPE over the first rope_dim dims, with rope_sections (Qwen3.5)
	LongRope      bool // LongRoPE's short and long factor sets and attention factor (Phi-3.5, Phi-4-mini)
	// LocalGlobal: layers are sliding-window ("local", Config.LayerTypes'
	// LayerSlidingAttention) or full ("global") attention, each kind with
	// its own RoPE base (Config.RopeLocalTheta for the local ones, which
	// are never scaled); Gemma 3.
	LocalGlobal bool
	// SandwichNorm: each mixer's output is RMS-normalised with its own
	// weight before it is added to the residual stream (Gemma's
	// post_attention_norm and post_ffw_norm; MatMulFusion.PostNorm).
	SandwichNorm bool
	// Gemma4 is Gemma 4's attention: the local layers' own head dim
	// (Config.HeadDimSWA), per-layer FFN widths, the last layers reading
	// an earlier layer's keys and values (Config.SharedKVLayers), q, k
	// and v RMS-normed per head in the q/k/v projection's epilogue
	// (v without a weight), attention scale 1, rope_freqs on the global
	// layers only.
	Gemma4 bool
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
	// ChannelGeGLU is Gemma's MLP: merged gate_up, gelu_tanh(gate)·up
	// (GeluAndMul with approximate="tanh"), down.
	ChannelGeGLU ChannelKind = "geglu"
	// ChannelGeGLUMoE is Gemma 4 26B-A4B's channel mixer: the dense GeGLU
	// and a routed MoE of GeGLU experts side by side, each output
	// RMS-normed with its own weight, their sum RMS-normed again before
	// the residual add. The router reads the unweighted RMSNorm of the
	// residual times its own scale vector, and each expert's output has
	// its own scale (family_gemma4.go).
	ChannelGeGLUMoE ChannelKind = "geglu_moe"
)

// Families is the family table.
var Families = []Family{
	{Arch: ArchLlama, Attention: AttentionFeatures{Bias: true, SlidingWindow: true}, Channel: ChannelGatedMLP},
	{Arch: ArchQwen2, Attention: AttentionFeatures{Bias: true, SlidingWindow: true}, Channel: ChannelGatedMLP},
	{Arch: ArchQwen3, Attention: AttentionFeatures{QKNorm: true}, Channel: ChannelGatedMLP},
	{Arch: ArchQwen3MoE, Attention: AttentionFeatures{QKNorm: true}, Channel: ChannelMoE},
	{Arch: ArchQwen35, Attention: qwen35Attention, Channel: ChannelGatedMLP, DeltaNet: true},
	{Arch: ArchQwen35MoE, Attention: qwen35Attention, Channel: ChannelMoE, DeltaNet: true, SharedExpert: true},
	{Arch: ArchPhi3, Attention: phi3Attention, Channel: ChannelGatedMLP},
	{Arch: ArchGemma3, Attention: gemma3Attention, Channel: ChannelGeGLU, EmbedScale: true, SoftCap: true},
	{Arch: ArchGemma4, Attention: gemma4Attention, Channel: ChannelGeGLU, MoEChannel: ChannelGeGLUMoE, EmbedScale: true, SoftCap: true, PerLayerInput: true},
}

var qwen35Attention = AttentionFeatures{QKNorm: true, OutputGate: true, PartialRope: true}

// MixerKind names a token mixer.
type MixerKind string

// The token mixers.
const (
	// MixerAttention is causal softmax attention over a KV cache.
	MixerAttention MixerKind = "attention"
	// MixerDeltaNet is the Gated DeltaNet (Qwen3.5's linear attention): a
	// causal conv, then the gated delta rule on a recurrent state.
	MixerDeltaNet MixerKind = "gated_deltanet"
)

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
	Mixer     MixerKind     // "" reads as MixerAttention
	Attention AttentionSpec // when Mixer is attention
	DeltaNet  DeltaNetSpec  // when Mixer is MixerDeltaNet
	Channel   ChannelSpec
	// PerLayer: the layer ends with its per-layer input (Gemma 4):
	// res += RMSNorm(proj(gelu_tanh(inp_gate(res)) · ple[l]))·post_norm.
	PerLayer bool
	// OutScale: the layer's output, residual included, is multiplied by
	// its layer_output_scale (Gemma 4).
	OutScale bool
}

// IsDeltaNet reports whether the layer's token mixer is a Gated DeltaNet.
func (sp *LayerSpec) IsDeltaNet() bool { return sp.Mixer == MixerDeltaNet }

// AttentionSpec is an attention layer's parameters.
type AttentionSpec struct {
	Heads, KVHeads, HeadDim int      // H, Hk, Dh
	Window                  int      // sliding window; 0: every position
	QKNorm                  bool     // q/k norm weights
	Bias                    bool     // q/k/v biases
	OutputGate              bool     // a gate per query head: out *= sigmoid(gate)
	Rope                    RopeSpec // the layer's rotation
	// NormQKV: q, k and v are RMS-normalised per head by the q/k/v
	// projection's post-norm (NameQKVNorm: each head's weight, with the
	// attention scale folded into q's), not by RoPEKV (Gemma 4).
	NormQKV bool
	// SharesKV: the layer computes only queries and attends over layer
	// KVSource's keys and values (Gemma 4's shared KV).
	SharesKV bool
	KVSource int
	// PostNorm: the output projection's result is RMS-normalised with the
	// layer's post_attention_norm before the residual add (sandwich norm).
	PostNorm bool
}

// RopeSpec is an attention layer's rotary embedding: layers of one model
// may differ (Gemma's local and global layers have their own bases), and
// each distinct spec gets one frequency table.
type RopeSpec struct {
	Theta   float64      // the base
	Scaling *RopeScaling // llama3's; nil: none
	Dim     int          // rotated dims per head: Dh, or fewer (partial rotary)
	// NoFactors: the GGUF's rope_freqs do not apply (Gemma 4's local
	// layers; its global layers take them).
	NoFactors bool
	NeoX      bool // rotate halves; false: adjacent pairs
	// Sections are IMROPE's (interleaved multimodal RoPE) sections, all
	// zero for plain RoPE.
	Sections [4]int
}

// InvFreq returns the Dim/2 inverse frequencies: theta^(-2i/Dim), with
// llama3 scaling applied when configured (as in Hugging Face's
// _compute_llama3_parameters). LongRoPE's factors are tensors, applied by
// Build (newRoPE), not here.
//
// With Sections (IMROPE, ggml's rope_multi), pair i of sector
// s = i mod Σsections takes the first (time), second (height) or third
// (width) position when s%3 is 0, 1 or 2 and s < 3·sections[s%3], else the
// fourth. A text token's positions are (p, p, p, 0), so such a pair
// rotates by p·theta^(-2i/Dim) or not at all: its frequency is set to 0,
// and IMROPE is plain RoPE with these frequencies. With sections summing
// to Dim/2 (Qwen3.5's [11, 11, 10, 0] of 64, or [3, 3, 2, 0] of 16) every
// pair rotates.
func (r RopeSpec) InvFreq() []float32 {
	out := make([]float32, r.Dim/2)
	total := r.Sections[0] + r.Sections[1] + r.Sections[2] + r.Sections[3]
	for i := range out {
		if total > 0 {
			s := i % total
			if s >= 3*r.Sections[s%3] {
				continue // the fourth position: 0 for text
			}
		}
		f := 1 / math.Pow(r.Theta, float64(2*i)/float64(r.Dim))
		if s := r.Scaling; s != nil && s.Type != RopeLongRoPE {
			f = s.scale(f)
		}
		out[i] = float32(f)
	}
	return out
}

// ChannelSpec is a channel mixer's kind and parameters.
type ChannelSpec struct {
	Kind        ChannelKind
	FFN         int // F: the gated MLP's, or each expert's, intermediate size
	Experts     int // E (MoE)
	ExpertsUsed int // A (MoE)
	// ExpertFFN is each expert's intermediate size where the layer also
	// has a dense MLP of FFN (ChannelGeGLUMoE); 0: FFN.
	ExpertFFN int
	NormTopK  bool // renormalise the top-A weights to sum 1 (MoE)
	SharedFFN int  // the shared expert's intermediate size; 0: none (MoE)
	// PostNorm: the down projection's result is RMS-normalised with the
	// layer's post_ffw_norm before the residual add (sandwich norm).
	PostNorm bool
}

// Specs gives each layer's spec: the family's kinds with the config's
// parameters. For a config of no family (which Validate refuses), the
// channel mixer is MoE when it has experts.
func (c *Config) Specs() []LayerSpec {
	channel := ChannelGatedMLP
	var fam *Family
	if f, ok := FamilyOf(c.Arch); ok {
		fam, channel = f, f.Channel
		if c.MoE() && f.MoEChannel != "" {
			channel = f.MoEChannel
		}
	} else if c.MoE() {
		channel = ChannelMoE
	}
	sandwich := fam != nil && fam.Attention.SandwichNorm
	specs := make([]LayerSpec, max(c.Layers, 0))
	for l := range specs {
		specs[l] = LayerSpec{
			Mixer: MixerAttention,
			Attention: AttentionSpec{Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
				Window: c.SlidingWindow, QKNorm: c.QKNorm, Bias: c.QKVBias, OutputGate: c.AttnOutputGate, Rope: c.ropeSpec(),
				PostNorm: sandwich},
			Channel: ChannelSpec{Kind: channel, FFN: c.FFN, PostNorm: sandwich},
		}
		if fam != nil && fam.Attention.LocalGlobal && c.LayerTypes != nil {
			c.localGlobal(&specs[l].Attention, l)
		}
		if fam != nil && fam.Attention.Gemma4 {
			c.gemma4Layer(&specs[l], l)
		}
		if c.LinearLayer(l) {
			specs[l].Mixer, specs[l].Attention = MixerDeltaNet, AttentionSpec{}
			specs[l].DeltaNet = c.deltaNetSpec()
		}
		switch channel {
		case ChannelMoE:
			specs[l].Channel = ChannelSpec{Kind: ChannelMoE, FFN: c.ExpertFFN, Experts: c.Experts,
				ExpertsUsed: c.ExpertsUsed, NormTopK: c.NormTopK, SharedFFN: c.SharedExpertFFN}
		case ChannelGeGLUMoE:
			ch := &specs[l].Channel
			ch.Experts, ch.ExpertsUsed, ch.NormTopK, ch.ExpertFFN = c.Experts, c.ExpertsUsed, c.NormTopK, c.ExpertFFN
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
	case c.MoE() != (fam.Channel == ChannelMoE) && !(c.MoE() && fam.MoEChannel != ""):
		return &ConfigError{"num_experts", c.Experts, fmt.Sprintf("architecture %s's channel mixer is %s", c.Arch, fam.Channel)}
	case (c.RopeDim != 0 || c.RopeSections != nil) && !a.PartialRope:
		return &ConfigError{"rope_dim", c.RopeDim, fmt.Sprintf("architecture %s rotates whole heads", c.Arch)}
	case c.RopeLocalTheta != 0 && !a.LocalGlobal:
		return &ConfigError{"rope_local_base_freq", c.RopeLocalTheta, fmt.Sprintf("architecture %s has no local layers", c.Arch)}
	case c.FinalLogitSoftcap != 0 && !fam.SoftCap:
		return &ConfigError{"final_logit_softcapping", c.FinalLogitSoftcap, fmt.Sprintf("architecture %s has no logit soft-cap", c.Arch)}
	}
	if err := c.validateGemma(fam); err != nil {
		return err
	}
	return c.validateHybrid(fam)
}
