package model

import (
	"fmt"
	"math"
)

// Arch names the supported architectures.
const (
	ArchLlama    = "llama"
	ArchQwen3    = "qwen3"
	ArchQwen3MoE = "qwen3moe"
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
	RMSEps         float64      `json:"rms_norm_eps"`
	RopeTheta      float64      `json:"rope_theta"`
	RopeNeoX       bool         `json:"rope_neox"` // rotate halves; false for GGUF llama's interleaved pairs
	RopeScaling    *RopeScaling `json:"rope_scaling,omitempty"`
	MaxContext     int          `json:"max_position_embeddings"`
	TiedEmbeddings bool         `json:"tie_word_embeddings"`
}

// RopeScaling is Hugging Face's rope_scaling block; only type "llama3" is
// supported.
type RopeScaling struct {
	Type                          string  `json:"rope_type"`
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`
	HighFreqFactor                float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
}

// MoE reports whether the model has a sparse MLP.
func (c *Config) MoE() bool { return c.Experts > 0 }

// Validate checks the config for values the forward pass cannot run.
func (c *Config) Validate() error {
	switch c.Arch {
	case ArchLlama, ArchQwen3, ArchQwen3MoE:
	default:
		return fmt.Errorf("model: unsupported architecture %q", c.Arch)
	}
	bad := func(name string, v int) error { return fmt.Errorf("model: %s is %d", name, v) }
	switch {
	case c.Vocab <= 0:
		return bad("vocab_size", c.Vocab)
	case c.Hidden <= 0:
		return bad("hidden_size", c.Hidden)
	case c.Layers <= 0:
		return bad("num_layers", c.Layers)
	case c.Heads <= 0:
		return bad("num_heads", c.Heads)
	case c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("model: num_heads %d is not a multiple of num_kv_heads %d", c.Heads, c.KVHeads)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0:
		return bad("head_dim", c.HeadDim)
	}
	if c.MoE() {
		if c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts || c.ExpertFFN <= 0 {
			return fmt.Errorf("model: MoE with %d experts, %d used, expert ffn %d", c.Experts, c.ExpertsUsed, c.ExpertFFN)
		}
	} else if c.FFN <= 0 {
		return bad("intermediate_size", c.FFN)
	}
	if c.RopeScaling != nil && c.RopeScaling.Type != "llama3" {
		return fmt.Errorf("model: unsupported rope_scaling type %q", c.RopeScaling.Type)
	}
	return nil
}

// InvFreq returns the Dh/2 RoPE inverse frequencies: theta^(-2i/Dh), with
// llama3 scaling applied when configured (as in Hugging Face's
// _compute_llama3_parameters).
func (c *Config) InvFreq() []float32 {
	n := c.HeadDim / 2
	out := make([]float32, n)
	for i := range out {
		f := 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim))
		if s := c.RopeScaling; s != nil {
			f = llama3Scale(f, s)
		}
		out[i] = float32(f)
	}
	return out
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
