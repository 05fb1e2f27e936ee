package model

import (
	"errors"
	"fmt"
	"math"

	"wasmllm/loader"
)

// Arch names the supported architectures.
const (
	ArchLlama    = "llama"
	ArchQwen3    = "qwen3"
	ArchQwen3MoE = "qwen3moe"
	ArchQwen2    = "qwen2" // Qwen2, Qwen2.5: q/k/v biases, no q/k norm
	// Qwen3.5 and Qwen3.6: Gated DeltaNet layers between gated attention
	// layers (qwen35: a gated MLP; qwen35moe: MoE with a shared expert).
	ArchQwen35    = "qwen35"
	ArchQwen35MoE = "qwen35moe"
	// Gemma 3 (270M to 27B, text): local and global attention layers,
	// GeGLU, sandwich norms (family_gemma.go).
	ArchGemma3 = "gemma3"
	// Gemma 4 (E2B, E4B): Gemma 3's layers with per-layer head dims and
	// FFN widths, KV shared from earlier layers, per-layer embeddings,
	// attention scale 1 (family_gemma4.go).
	ArchGemma4 = "gemma4"
)

// Layer types of Config.LayerTypes (Hugging Face's layer_types values).
const (
	LayerFullAttention   = "full_attention"
	LayerLinearAttention = "linear_attention" // a Gated DeltaNet layer
	// LayerSlidingAttention is a local layer of a family with local and
	// global attention (Gemma): attention over the last SlidingWindow
	// positions, with the local RoPE base.
	LayerSlidingAttention = "sliding_attention"
)

// Config is one model's hyperparameters, whatever file it came from.
type Config struct {
	Arch           string       `json:"arch"`
	Vocab          int          `json:"vocab_size"`          // V
	Hidden         int          `json:"hidden_size"`         // D
	Layers         int          `json:"num_layers"`          // L
	Heads          int          `json:"num_heads"`           // H
	KVHeads        int          `json:"num_kv_heads"`        // Hk
	HeadDim        int          `json:"head_dim"`            // Dh
	FFN            int          `json:"intermediate_size"`   // F (dense)
	Experts        int          `json:"num_experts"`         // E (MoE only)
	ExpertsUsed    int          `json:"num_experts_per_tok"` // A
	ExpertFFN      int          `json:"moe_intermediate_size"`
	NormTopK       bool         `json:"norm_topk_prob"`
	QKNorm         bool         `json:"qk_norm"`
	QKVBias        bool         `json:"attention_bias,omitempty"` // q/k/v projections have biases (Qwen2), added before RoPE
	RMSEps         float64      `json:"rms_norm_eps"`
	RopeTheta      float64      `json:"rope_theta"`
	RopeNeoX       bool         `json:"rope_neox"` // rotate halves; false for GGUF llama's interleaved pairs
	RopeScaling    *RopeScaling `json:"rope_scaling,omitempty"`
	MaxContext     int          `json:"max_position_embeddings"`
	TiedEmbeddings bool         `json:"tie_word_embeddings"`
	// SlidingWindow, when > 0, is Mistral's sliding_window: a token attends
	// only to the last SlidingWindow positions, its own included. 0: none.
	SlidingWindow int `json:"sliding_window,omitempty"`

	// Hybrid families (qwen35, qwen35moe); zero for the others.

	// LayerTypes, when set, gives each layer's token mixer:
	// LayerFullAttention or LayerLinearAttention (Gated DeltaNet). Unset:
	// every layer is attention.
	LayerTypes []string `json:"layer_types,omitempty"`
	// AttnOutputGate: the attention's query projection carries a gate per
	// head, and the output is multiplied by sigmoid(gate) before o_proj.
	AttnOutputGate bool `json:"attn_output_gate,omitempty"`
	// RopeDim, when > 0, rotates only the first RopeDim dims of each head
	// (partial rotary; the frequencies' exponent is over RopeDim). 0: HeadDim.
	RopeDim int `json:"rope_dim,omitempty"`
	// RopeSections are multimodal RoPE's (interleaved, IMROPE) sections;
	// for text, a pair whose section is the fourth is not rotated
	// (RopeSpec.InvFreq).
	RopeSections []int `json:"rope_sections,omitempty"`
	// The Gated DeltaNet layers: conv kernel, key heads n_k, value heads n_v
	// (a multiple of n_k) and the head dim S of keys and values alike.
	LinearConvKernel int `json:"linear_conv_kernel_dim,omitempty"`
	LinearKeyHeads   int `json:"linear_num_key_heads,omitempty"`
	LinearValueHeads int `json:"linear_num_value_heads,omitempty"`
	LinearHeadDim    int `json:"linear_key_head_dim,omitempty"`
	// SharedExpertFFN, when > 0, is the MoE's shared expert's intermediate
	// size (a gated MLP scaled by a sigmoid gate, added to the experts').
	SharedExpertFFN int `json:"shared_expert_intermediate_size,omitempty"`
	// MTPLayers is how many NextN/MTP blocks the weights hold after the
	// trunk's Layers (Qwen3.5's multi-token prediction head, the draft
	// model of speculative decoding, mtp.go): 0 unless the source was
	// loaded with LoadOptions.MTP.
	MTPLayers int `json:"mtp_num_hidden_layers,omitempty"`

	// Gemma (family_gemma.go); zero for the others.

	// RopeLocalTheta is the RoPE base of the local (sliding-window)
	// layers, Hugging Face's rope_local_base_freq; RopeTheta and
	// RopeScaling are the global layers'. 0: RopeTheta.
	RopeLocalTheta float64 `json:"rope_local_base_freq,omitempty"`
	// FinalLogitSoftcap, when > 0, is c of the logits' soft-cap
	// c·tanh(logits/c).
	FinalLogitSoftcap float64 `json:"final_logit_softcapping,omitempty"`

	// Gemma 4 (family_gemma4.go); zero for the others.

	// HeadDimSWA is the local layers' head dim (HeadDim is the global
	// layers'); 0: HeadDim.
	HeadDimSWA int `json:"head_dim_swa,omitempty"`
	// LayerFFN, when set, is each layer's intermediate size (Gemma 4's
	// double-wide MLP on the shared-KV layers); nil: FFN everywhere.
	LayerFFN []int `json:"layer_intermediate_sizes,omitempty"`
	// LayerKVHeads, when set, is each layer's KV-head count (Gemma 4
	// 26B-A4B: the global layers have fewer); nil: KVHeads everywhere.
	// KVHeads is then the largest.
	LayerKVHeads []int `json:"layer_num_kv_heads,omitempty"`
	// SharedKVLayers is how many last layers compute no keys and values
	// and read those of an earlier layer (Hugging Face's
	// num_kv_shared_layers): a local one layer L-S-2's, a global one
	// layer L-S-1's.
	SharedKVLayers int `json:"num_kv_shared_layers,omitempty"`
	// PerLayerInput is P of the per-layer embeddings (Hugging Face's
	// hidden_size_per_layer_input); 0: none.
	PerLayerInput int `json:"hidden_size_per_layer_input,omitempty"`

	// mtpAvailable is how many NextN/MTP blocks the source holds, loaded
	// or not.
	mtpAvailable int
	// longRoPEFactors are a Hugging Face config's LongRoPE short and long
	// factor lists, the source of the factor tensors (source_hf_phi3.go).
	longRoPEFactors [2][]float64
	// qScale is a Hugging Face Gemma 3 config's sqrt(head_dim /
	// query_pre_attn_scalar), folded into the q norm at load; 0: none.
	qScale float64
}

// LinearLayer reports whether layer l is a Gated DeltaNet layer.
func (c *Config) LinearLayer(l int) bool {
	return l < len(c.LayerTypes) && c.LayerTypes[l] == LayerLinearAttention
}

// Hybrid reports whether some layer is a Gated DeltaNet layer (the model
// keeps a recurrent state beside the KV cache).
func (c *Config) Hybrid() bool {
	for l := range c.LayerTypes {
		if c.LinearLayer(l) {
			return true
		}
	}
	return false
}

// AttentionLayers counts the layers with a KV cache.
func (c *Config) AttentionLayers() int {
	n := 0
	for l := 0; l < c.Layers; l++ {
		if !c.LinearLayer(l) {
			n++
		}
	}
	return n
}

// RopeScaling is Hugging Face's rope_scaling block: type "llama3", or
// "linear" (every frequency divided by Factor; Gemma 3's global layers),
// or "longrope" (RopeLongRoPE: Phi-3.5, Phi-4-mini), whose short and long
// factors are the canonical tensors NameRopeFactorsShort and
// NameRopeFactorsLong.
type RopeScaling struct {
	Type                          string  `json:"rope_type"`
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`
	HighFreqFactor                float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
	// AttentionFactor is LongRoPE's: cos and sin are multiplied by it.
	AttentionFactor float64 `json:"attention_factor,omitempty"`
}

// MoE reports whether the model has a sparse MLP.
func (c *Config) MoE() bool { return c.Experts > 0 }

// Bounds of the config values the engine runs: a few times past the
// largest real models (Llama-3.1-405B: D 16384, L 126, F 53248; Qwen3-MoE:
// E 128), so that a hostile file cannot ask for absurd loops or buffers.
const (
	MaxVocab      = 1 << 24
	MaxHidden     = 1 << 16
	MaxLayers     = 1024
	MaxHeads      = 1024
	MaxHeadDim    = 1024
	MaxFFN        = 1 << 20
	MaxExperts    = 4096
	MaxExpertsUse = 256
	MaxContext    = 1 << 24
	// MaxParams bounds the weights' element count (about 4.4 T).
	MaxParams = 1 << 42
)

// ConfigError reports a config value outside what the engine runs. Field
// is the canonical (manifest) name; each source maps it to its own key.
type ConfigError struct {
	Field  string // e.g. "num_layers" or "rope_scaling.factor"
	Value  any
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("model: %s = %v: %s", e.Field, e.Value, e.Reason)
}

// Validate checks the config for values the forward pass cannot run: every
// size within its bound (and their products within MaxParams), every float
// finite and in range. Errors are *ConfigError.
func (c *Config) Validate() error {
	if _, ok := FamilyOf(c.Arch); !ok {
		return &ConfigError{"arch", c.Arch, "unsupported architecture"}
	}
	in := func(field string, v, lo, hi int) error {
		if v < lo || v > hi {
			return &ConfigError{field, v, fmt.Sprintf("want %d..%d", lo, hi)}
		}
		return nil
	}
	checks := []error{
		in("vocab_size", c.Vocab, 1, MaxVocab),
		in("hidden_size", c.Hidden, 1, MaxHidden),
		in("num_layers", c.Layers, 1, MaxLayers),
		in("num_heads", c.Heads, 1, MaxHeads),
		in("num_kv_heads", c.KVHeads, 1, max(c.Heads, 1)),
		in("head_dim", c.HeadDim, 2, MaxHeadDim),
		in("max_position_embeddings", c.MaxContext, 0, MaxContext),
		in("sliding_window", c.SlidingWindow, 0, MaxContext),
	}
	if c.MoE() {
		checks = append(checks,
			in("num_experts", c.Experts, 1, MaxExperts),
			in("num_experts_per_tok", c.ExpertsUsed, 1, min(c.Experts, MaxExpertsUse)),
			in("moe_intermediate_size", c.ExpertFFN, 1, MaxFFN))
	} else {
		checks = append(checks, in("intermediate_size", c.FFN, 1, MaxFFN))
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	switch {
	case c.Heads%c.KVHeads != 0:
		return &ConfigError{"num_kv_heads", c.KVHeads, fmt.Sprintf("num_heads %d is not a multiple of it", c.Heads)}
	case c.HeadDim%2 != 0:
		return &ConfigError{"head_dim", c.HeadDim, "not even (RoPE rotates pairs)"}
	case c.QKVBias && c.QKNorm:
		// The bias is added by the RoPE op, after QKNorm: the other order
		// has no op (no supported architecture needs it).
		return &ConfigError{"attention_bias", c.QKVBias, "q/k/v biases together with qk_norm are unsupported"}
	case !finite(c.RMSEps) || c.RMSEps <= 0 || c.RMSEps > 1:
		return &ConfigError{"rms_norm_eps", c.RMSEps, "want a finite value in (0, 1]"}
	case !finite(c.RopeTheta) || c.RopeTheta <= 1 || c.RopeTheta > 1e12:
		return &ConfigError{"rope_theta", c.RopeTheta, "want a finite value in (1, 1e12]"}
	}
	if s := c.RopeScaling; s != nil && s.Type == RopeLongRoPE {
		if err := c.validateLongRoPE(); err != nil {
			return err
		}
	} else if s != nil {
		if s.Type != "llama3" && s.Type != RopeLinear {
			return &ConfigError{"rope_scaling.rope_type", s.Type, "unsupported (llama3, linear or longrope)"}
		}
		switch {
		case !finite(s.Factor) || s.Factor < 1 || s.Factor > 1e4:
			return &ConfigError{"rope_scaling.factor", s.Factor, "want a finite value in [1, 1e4]"}
		case s.Type == RopeLinear:
		case !finite(s.LowFreqFactor) || s.LowFreqFactor <= 0:
			return &ConfigError{"rope_scaling.low_freq_factor", s.LowFreqFactor, "want a finite value > 0"}
		case !finite(s.HighFreqFactor) || s.HighFreqFactor <= s.LowFreqFactor || s.HighFreqFactor > 1e6:
			return &ConfigError{"rope_scaling.high_freq_factor", s.HighFreqFactor, fmt.Sprintf("want a finite value in (low_freq_factor %v, 1e6]", s.LowFreqFactor)}
		case s.OriginalMaxPositionEmbeddings < 1 || s.OriginalMaxPositionEmbeddings > MaxContext:
			return &ConfigError{"rope_scaling.original_max_position_embeddings", s.OriginalMaxPositionEmbeddings, fmt.Sprintf("want 1..%d", MaxContext)}
		}
	}
	if err := c.checkFamily(); err != nil {
		return err
	}
	if err := c.validateMTP(); err != nil {
		return err
	}
	if n, ok := c.params(); !ok || n > MaxParams {
		return &ConfigError{"num_layers", c.Layers, fmt.Sprintf("the shapes make more than %d weights", int64(MaxParams))}
	}
	return nil
}

// params counts the weights the config's shapes imply, with checked
// arithmetic (false on overflow).
func (c *Config) params() (int64, bool) {
	var n checked
	D, Dh := int64(c.Hidden), int64(c.HeadDim)
	heads := n.mul(int64(c.Heads+2*c.KVHeads), Dh)
	if c.AttnOutputGate {
		heads = n.add(heads, n.mul(int64(c.Heads), Dh))
	}
	attn := n.add(n.add(n.mul(heads, D), heads), n.mul(D, n.mul(int64(c.Heads), Dh)))
	var channel int64
	if c.MoE() {
		E, F := int64(c.Experts), int64(c.ExpertFFN)
		channel = n.add(n.mul(E, D), n.mul(n.mul(E, 3*F), D))
		channel = n.add(channel, n.mul(n.add(3*int64(c.SharedExpertFFN), 1), D))
	} else {
		channel = n.mul(3*int64(c.FFN), D)
	}
	if fam, ok := FamilyOf(c.Arch); ok && c.MoE() && fam.MoEChannel != "" { // the dense MLP beside the experts
		channel = n.add(channel, n.mul(3*int64(c.FFN), D))
	}
	var linear int64
	if c.Hybrid() {
		S, nk, nv := int64(c.LinearHeadDim), int64(c.LinearKeyHeads), int64(c.LinearValueHeads)
		conv := n.mul(n.add(2*nk, nv), S)
		inner := n.mul(nv, S)
		proj := n.add(n.add(conv, inner), 2*nv)
		linear = n.add(n.add(n.mul(proj, D), n.mul(conv, int64(c.LinearConvKernel))), n.add(n.mul(D, inner), S+2*nv))
	}
	full := int64(c.AttentionLayers())
	layers := n.add(n.mul(full, attn), n.mul(int64(c.Layers)-full, linear))
	layers = n.add(layers, n.mul(int64(c.Layers), channel))
	total := n.add(n.mul(2*int64(c.Vocab), D), layers)
	if P := int64(c.PerLayerInput); P > 0 { // Gemma 4's per-layer embeddings: the table, the projection, each layer's gate and proj
		LP := n.mul(int64(c.Layers), P)
		total = n.add(total, n.add(n.mul(int64(c.Vocab), LP), n.mul(n.mul(3, LP), D)))
	}
	return total, !n.overflow
}

// checked is int64 arithmetic on non-negative values that remembers an
// overflow.
type checked struct{ overflow bool }

func (c *checked) mul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		c.overflow = true
		return math.MaxInt64
	}
	return a * b
}

func (c *checked) add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		c.overflow = true
		return math.MaxInt64
	}
	return a + b
}

// validateIn is Validate with a failure reported as a *loader.FormatError
// naming file and the source's own key for the field (key maps a canonical
// field name to it; nil keeps the canonical name).
func (c *Config) validateIn(file string, key func(field string) string) error {
	err := c.Validate()
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	field := ce.Field
	if key != nil {
		field = key(field)
	}
	return &loader.FormatError{File: file, Field: field, Offset: -1, Err: fmt.Errorf("%w: %w", loader.ErrCorrupt, err)}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// InvFreq returns the RoPE inverse frequencies of the config's rotation
// (RopeSpec.InvFreq): Dh/2, or RopeDim/2 with partial rotary.
func (c *Config) InvFreq() []float32 { return c.ropeSpec().InvFreq() }

// ropeSpec is the rotation of every attention layer of the families here.
func (c *Config) ropeSpec() RopeSpec {
	r := RopeSpec{Theta: c.RopeTheta, Scaling: c.RopeScaling, Dim: c.HeadDim, NeoX: c.RopeNeoX}
	if c.RopeDim > 0 {
		r.Dim = c.RopeDim
	}
	if len(c.RopeSections) == 4 {
		r.Sections = [4]int(c.RopeSections)
	}
	return r
}

// RopeLinear is RopeScaling.Type's linear scaling (Hugging Face's
// "linear", llama.cpp's freq_scale = 1/factor).
const RopeLinear = "linear"

// scale is the frequency f under s.
func (s *RopeScaling) scale(f float64) float64 {
	if s.Type == RopeLinear {
		return f / s.Factor
	}
	return llama3Scale(f, s)
}

func llama3Scale(f float64, s *RopeScaling) float64 {
	old := float64(s.OriginalMaxPositionEmbeddings)
	lowWavelen := old / s.LowFreqFactor
	highWavelen := old / s.HighFreqFactor
	wavelen := 2 * math.Pi / f
	switch {
	case wavelen < highWavelen:
		return f
	case wavelen > lowWavelen:
		return f / s.Factor
	}
	smooth := (old/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
	return (1-smooth)*f/s.Factor + smooth*f
}
