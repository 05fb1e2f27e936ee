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

// Encoder architectures.
const (
	ArchBert      = "bert"
	ArchNomicBert = "nomic-bert"
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
	Mixer     MixerKind
	Channel   ChannelKind
	// Biases: the attention's q/k/v and output projections have biases.
	Biases bool
}

// EncoderFamilies is the encoder family table.
var EncoderFamilies = []EncoderFamily{
	{Arch: ArchBert, Positions: PositionsLearned, Mixer: MixerBidirectional, Channel: ChannelGELU, Biases: true},
	{Arch: ArchNomicBert, Positions: PositionsRope, Mixer: MixerBidirectional, Channel: ChannelSwiGLU},
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
	Heads   int     `json:"num_heads"`               // H (= Hk)
	FFN     int     `json:"intermediate_size"`       // F
	MaxLen  int     `json:"max_position_embeddings"` // C: the most tokens of one input
	NormEps float64 `json:"layer_norm_eps"`
	// RopeTheta is the rotary base (nomic-bert).
	RopeTheta float64 `json:"rope_theta,omitempty"`
	// TokenTypes is the token type table's rows (bert); type 0 is used.
	TokenTypes int     `json:"type_vocab_size,omitempty"`
	Pooling    Pooling `json:"pooling"`
}

// HeadDim is D / H.
func (c *EncoderConfig) HeadDim() int { return c.Hidden / max(c.Heads, 1) }

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
	if c.Hidden%c.Heads != 0 || c.HeadDim()%2 != 0 {
		return &ConfigError{"num_heads", c.Heads, fmt.Sprintf("hidden_size %d must split into heads of an even size", c.Hidden)}
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
