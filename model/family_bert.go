package model

import "fmt"

// The encoder families: text-embedding models whose layers read the whole
// sequence at once (bidirectional attention) and whose output is a pooled
// vector, not logits. Like the decoder families (family.go) each is a row
// naming its layer kinds; Encoder (encoder.go) runs them.
//
//	family      positions        token mixer                         channel mixer
//	bert        learned absolute bidirectional MHA, q/k/v/o biases,   GELU (erf) MLP with biases,
//	            + token type 0   post-LayerNorm                      post-LayerNorm
//	nomic-bert  RoPE (NEOX)      bidirectional MHA, fused QKV, no     SwiGLU, no biases,
//	                             biases, post-LayerNorm              post-LayerNorm
//	gemma-      RoPE (NEOX),     gemma3's attention (GQA, q/k norm,  gemma3's GeGLU, sandwich
//	embedding   local/global     sandwich norm) run bidirectionally; RMSNorms; embedding × √D,
//	            bases            local layers a symmetric window     final RMSNorm, dense projections

// Encoder architectures.
const (
	ArchBert           = "bert"
	ArchNomicBert      = "nomic-bert"
	ArchGemmaEmbedding = "gemma-embedding"
)

// Pooling turns a sequence's hidden rows into one vector.
type Pooling string

// The poolings (llama.cpp's pooling_type 1, 2, 3).
const (
	PoolMean Pooling = "mean" // the average of the rows
	PoolCLS  Pooling = "cls"  // the first token's row ([CLS])
	PoolLast Pooling = "last" // the last token's row (Qwen3-Embedding's appended EOS)
)

// PositionKind says how an encoder family places tokens.
type PositionKind string

// The position kinds.
const (
	PositionsLearned PositionKind = "learned" // a (C, D) table added to the token embedding
	PositionsRope    PositionKind = "rope"    // rotary, on q and k of every layer
)

// Encoder layer kinds.
const (
	// MixerBidirectional is softmax attention over every token of the
	// token's own sequence (no causal mask), then the output projection
	// and a post-LayerNorm of the residual.
	MixerBidirectional MixerKind = "bidirectional_attention"
	// ChannelGELU is BERT's MLP: up + bias, GELU (erf), down + bias, then
	// a post-LayerNorm of the residual.
	ChannelGELU ChannelKind = "gelu_mlp"
	// ChannelSwiGLU is nomic-bert's MLP: down(up(x) · silu(gate(x))), no
	// biases, then a post-LayerNorm of the residual.
	ChannelSwiGLU ChannelKind = "swiglu_mlp"
)

// EncoderFamily is one row of the encoder family table.
type EncoderFamily struct {
	Arch      string
	Positions PositionKind
	// Mixer and Channel are the layer kinds: the encoder's own
	// (MixerBidirectional, ChannelGELU, ChannelSwiGLU: post-LayerNorm), or a
	// decoder family's pre-RMSNorm kinds (MixerAttention with Attention's
	// features, ChannelGeGLU) run bidirectionally within each sequence
	// (their encode methods, encoder.go).
	Mixer     MixerKind
	Channel   ChannelKind
	Attention AttentionFeatures
	// Biases: the attention's q/k/v and output projections have biases.
	Biases bool
	// EmbedScale: the token embedding is multiplied by sqrt(D) (Gemma),
	// with no token type, position table or embedding LayerNorm.
	EmbedScale bool
	// FinalNorm: the last layer's output is RMS-normalised (output_norm),
	// then projected by the optional dense layers (dense_2, dense_3: the
	// sentence-transformers Dense modules), no bias or activation.
	FinalNorm bool
}

// EncoderFamilies is the encoder family table.
var EncoderFamilies = []EncoderFamily{
	{Arch: ArchBert, Positions: PositionsLearned, Mixer: MixerBidirectional, Channel: ChannelGELU, Biases: true},
	{Arch: ArchNomicBert, Positions: PositionsRope, Mixer: MixerBidirectional, Channel: ChannelSwiGLU},
	{Arch: ArchGemmaEmbedding, Positions: PositionsRope, Mixer: MixerAttention, Attention: gemma3Attention, Channel: ChannelGeGLU,
		EmbedScale: true, FinalNorm: true},
}

// EncoderFamilyOf returns arch's row of the encoder family table.
func EncoderFamilyOf(arch string) (*EncoderFamily, bool) {
	for i := range EncoderFamilies {
		if EncoderFamilies[i].Arch == arch {
			return &EncoderFamilies[i], true
		}
	}
	return nil, false
}

// EncoderConfig is an encoder's hyperparameters.
type EncoderConfig struct {
	Arch    string  `json:"arch"`
	Vocab   int     `json:"vocab_size"`              // V
	Hidden  int     `json:"hidden_size"`             // D
	Layers  int     `json:"num_layers"`              // L
	Heads   int     `json:"num_heads"`               // H
	FFN     int     `json:"intermediate_size"`       // F
	MaxLen  int     `json:"max_position_embeddings"` // C: the most tokens of one input
	NormEps float64 `json:"layer_norm_eps"`
	// RopeTheta is the rotary base (nomic-bert).
	RopeTheta float64 `json:"rope_theta,omitempty"`
	// TokenTypes is the token type table's rows (bert); type 0 is used.
	TokenTypes int     `json:"type_vocab_size,omitempty"`
	Pooling    Pooling `json:"pooling"`
	// The gemma-embedding fields. KVHeads (GQA) and HeadSize: 0 reads as
	// Heads and D / H.
	KVHeads  int `json:"num_key_value_heads,omitempty"`
	HeadSize int `json:"head_dim,omitempty"`
	// SlidingWindow is the local layers' window: a key within
	// SlidingWindow/2 positions either side (llama.cpp's symmetric SWA).
	SlidingWindow int `json:"sliding_window,omitempty"`
	// RopeLocalTheta is the local layers' rotary base.
	RopeLocalTheta float64 `json:"rope_local_base_freq,omitempty"`
	// SlidingPattern P: layer l is local when l % P < P-1 (0 reads as 6).
	SlidingPattern int `json:"sliding_window_pattern,omitempty"`
	// DenseDim is dense_2's output width (dense_3 maps it back to D); 0:
	// no dense projections.
	DenseDim int `json:"dense_dim,omitempty"`
}

// HeadDim is the head size: HeadSize, or D / H.
func (c *EncoderConfig) HeadDim() int {
	if c.HeadSize > 0 {
		return c.HeadSize
	}
	return c.Hidden / max(c.Heads, 1)
}

// KVHeadCount is the key/value heads: KVHeads, or Heads.
func (c *EncoderConfig) KVHeadCount() int {
	if c.KVHeads > 0 {
		return c.KVHeads
	}
	return c.Heads
}

// Local reports whether layer l is a local (sliding-window) layer: a
// LocalGlobal family's layers but every SlidingPattern-th.
func (c *EncoderConfig) Local(l int) bool {
	fam := c.Family()
	if fam == nil || !fam.Attention.LocalGlobal || c.SlidingWindow <= 0 {
		return false
	}
	p := c.SlidingPattern
	if p <= 0 {
		p = 6
	}
	return l%p < p-1
}

// Family is c's row of the encoder family table.
func (c *EncoderConfig) Family() *EncoderFamily {
	f, _ := EncoderFamilyOf(c.Arch)
	return f
}

// Validate checks the config for values the encoder cannot run; errors are
// *ConfigError.
func (c *EncoderConfig) Validate() error {
	fam, ok := EncoderFamilyOf(c.Arch)
	if !ok {
		return &ConfigError{"arch", c.Arch, "not an encoder architecture"}
	}
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{
		{"vocab_size", c.Vocab, MaxVocab}, {"hidden_size", c.Hidden, MaxHidden}, {"num_layers", c.Layers, MaxLayers},
		{"num_heads", c.Heads, MaxHeads}, {"intermediate_size", c.FFN, MaxFFN}, {"max_position_embeddings", c.MaxLen, MaxContext},
	} {
		if f.v <= 0 || f.v > f.max {
			return &ConfigError{f.name, f.v, fmt.Sprintf("must be in [1, %d]", f.max)}
		}
	}
	if c.HeadSize == 0 && (c.Hidden%c.Heads != 0 || c.HeadDim()%2 != 0) {
		return &ConfigError{"num_heads", c.Heads, fmt.Sprintf("hidden_size %d must split into heads of an even size", c.Hidden)}
	}
	if c.HeadSize < 0 || c.HeadSize > 256 || c.HeadSize%2 != 0 {
		return &ConfigError{"head_dim", c.HeadSize, "must be even and in [0, 256]"}
	}
	if kv := c.KVHeads; kv < 0 || kv > c.Heads || (kv > 0 && c.Heads%kv != 0) || (kv > 0 && kv != c.Heads && fam.Mixer != MixerAttention) {
		return &ConfigError{"num_key_value_heads", kv, fmt.Sprintf("must divide num_heads %d (GQA only for %s)", c.Heads, ArchGemmaEmbedding)}
	}
	if fam.Attention.LocalGlobal {
		if c.SlidingWindow <= 0 || c.SlidingWindow > MaxContext {
			return &ConfigError{"sliding_window", c.SlidingWindow, fmt.Sprintf("must be in [1, %d]", MaxContext)}
		}
		if t := c.RopeLocalTheta; !(finite(t) && t > 1 && t <= 1e12) {
			return &ConfigError{"rope_local_base_freq", t, "must be > 1 and finite"}
		}
		if c.SlidingPattern < 0 || c.SlidingPattern > MaxLayers {
			return &ConfigError{"sliding_window_pattern", c.SlidingPattern, fmt.Sprintf("must be in [0, %d]", MaxLayers)}
		}
	}
	if c.DenseDim < 0 || c.DenseDim > MaxFFN || (c.DenseDim > 0 && !fam.FinalNorm) {
		return &ConfigError{"dense_dim", c.DenseDim, fmt.Sprintf("must be in [0, %d], and only for %s", MaxFFN, ArchGemmaEmbedding)}
	}
	if !(finite(c.NormEps) && c.NormEps > 0 && c.NormEps < 1) {
		return &ConfigError{"layer_norm_eps", c.NormEps, "must be in (0, 1)"}
	}
	if fam.Positions == PositionsRope && !(finite(c.RopeTheta) && c.RopeTheta > 1 && c.RopeTheta <= 1e12) {
		return &ConfigError{"rope_theta", c.RopeTheta, "must be > 1 and finite"}
	}
	if fam.Positions == PositionsLearned && (c.TokenTypes <= 0 || c.TokenTypes > 16) {
		return &ConfigError{"type_vocab_size", c.TokenTypes, "must be in [1, 16]"}
	}
	switch c.Pooling {
	case PoolMean, PoolCLS, PoolLast:
	default:
		return &ConfigError{"pooling", c.Pooling, "must be mean, cls or last"}
	}
	return nil
}
