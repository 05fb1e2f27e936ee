package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"wasmllm/loader"
)

// hfGemmaConfig is what Gemma3ForCausalLM's config.json (and the text
// model's, under text_config, of Gemma3ForConditionalGeneration) adds to
// hfConfig, read as llama.cpp's converter reads it (conversion/gemma.py,
// Gemma3Model).
type hfGemmaConfig struct {
	QueryPreAttnScalar    *float64 `json:"query_pre_attn_scalar"`
	RopeLocalBaseFreq     float64  `json:"rope_local_base_freq"`
	SlidingWindowPattern  *int     `json:"sliding_window_pattern"`
	FinalLogitSoftcapping *float64 `json:"final_logit_softcapping"`
	AttnLogitSoftcapping  *float64 `json:"attn_logit_softcapping"`
	HiddenActivation      string   `json:"hidden_activation"`
}

// gemma3 finishes a Gemma3 config after the common keys: GeGLU (the
// tanh GELU), q/k norm, NEOX RoPE, the local layers (layer_types, else
// sliding_window_pattern, else llama.cpp's period of 6) with their base
// rope_local_base_freq (default 1e4) and window, linear RoPE scaling on
// the global layers, the soft-cap, tied embeddings unless the config
// unties them, and query_pre_attn_scalar (its 1/sqrt, unlike Attend's
// 1/sqrt(Dh), folded into the q norm at load: Config.qScale).
func (h *hfConfig) gemma3(c *Config, ferr func(string, error) error) error {
	c.Arch, c.QKNorm, c.RopeNeoX = ArchGemma3, true, true
	switch h.HiddenActivation {
	case "", "gelu_pytorch_tanh":
	default:
		return ferr("hidden_activation", fmt.Errorf("%w: %q", loader.ErrUnsupported, h.HiddenActivation))
	}
	if h.AttnLogitSoftcapping != nil && *h.AttnLogitSoftcapping != 0 {
		return ferr("attn_logit_softcapping", fmt.Errorf("%w: attention soft-cap (Gemma 2)", loader.ErrUnsupported))
	}
	c.TiedEmbeddings = h.TieWordEmbeddings == nil || *h.TieWordEmbeddings
	c.RopeLocalTheta = 10000
	if h.RopeLocalBaseFreq != 0 {
		c.RopeLocalTheta = h.RopeLocalBaseFreq
	}
	if h.FinalLogitSoftcapping != nil {
		c.FinalLogitSoftcap = *h.FinalLogitSoftcapping
	}
	if s := c.RopeScaling; s != nil && s.Type != RopeLinear {
		return ferr("rope_scaling", fmt.Errorf("%w: %q for gemma3", loader.ErrUnsupported, s.Type))
	}
	if s := c.RopeScaling; s != nil && s.Factor == 1 {
		c.RopeScaling = nil
	}
	if q := h.QueryPreAttnScalar; q != nil {
		if !finite(*q) || *q <= 0 {
			return ferr("query_pre_attn_scalar", fmt.Errorf("%w: %v", loader.ErrCorrupt, *q))
		}
		c.qScale = math.Sqrt(float64(c.HeadDim) / *q)
	}
	if c.SlidingWindow == 0 {
		return nil // every layer global
	}
	c.LayerTypes = make([]string, c.Layers)
	switch {
	case len(h.LayerTypes) > 0:
		if len(h.LayerTypes) != c.Layers {
			return ferr("layer_types", fmt.Errorf("%w: %d types for %d layers", loader.ErrCorrupt, len(h.LayerTypes), c.Layers))
		}
		for l, t := range h.LayerTypes {
			if t != LayerSlidingAttention && t != LayerFullAttention {
				return ferr("layer_types", fmt.Errorf("%w: %q", loader.ErrUnsupported, t))
			}
			c.LayerTypes[l] = t
		}
	default:
		period := 6
		if p := h.SlidingWindowPattern; p != nil {
			if *p < 0 || *p > MaxLayers {
				return ferr("sliding_window_pattern", fmt.Errorf("%w: %d", loader.ErrCorrupt, *p))
			}
			period = *p
		}
		for l := range c.LayerTypes {
			c.LayerTypes[l] = LayerFullAttention
			if period == 0 || l%period < period-1 {
				c.LayerTypes[l] = LayerSlidingAttention
			}
		}
	}
	return nil
}

// hfGemma3Tensors are Gemma3ForCausalLM's names of the canonical tensors
// (hfGemma3Source finds them in a ForConditionalGeneration checkpoint):
// every norm weight stored as w, read as 1 + w as the converter writes it
// (Gemma3RMSNorm computes x·(1 + w)); post_attention_layernorm is the
// attention's sandwich norm, pre_feedforward_layernorm the MLP's pre-norm.
var hfGemma3Tensors = tensorTable{
	NameEmbed:        one("model.embed_tokens.weight"),
	NameNorm:         withConfig(plusOne, "model.norm.weight"),
	NameLMHead:       one("lm_head.weight"),
	NameAttnNorm:     withConfig(plusOne, "model.layers.%d.input_layernorm.weight"),
	NameQKV:          rows("model.layers.%d.self_attn.q_proj.weight", "model.layers.%d.self_attn.k_proj.weight", "model.layers.%d.self_attn.v_proj.weight"),
	NameQNorm:        withConfig(hfGemma3QNorm, "model.layers.%d.self_attn.q_norm.weight"),
	NameKNorm:        withConfig(plusOne, "model.layers.%d.self_attn.k_norm.weight"),
	NameAttnOut:      one("model.layers.%d.self_attn.o_proj.weight"),
	NamePostAttnNorm: withConfig(plusOne, "model.layers.%d.post_attention_layernorm.weight"),
	NameFFNNorm:      withConfig(plusOne, "model.layers.%d.pre_feedforward_layernorm.weight"),
	NameGateUp:       rows("model.layers.%d.mlp.gate_proj.weight", "model.layers.%d.mlp.up_proj.weight"),
	NameDown:         one("model.layers.%d.mlp.down_proj.weight"),
	NamePostFFNNorm:  withConfig(plusOne, "model.layers.%d.post_feedforward_layernorm.weight"),
}

// hfGemma3QNorm is q's norm weight, 1 + w, times sqrt(Dh /
// query_pre_attn_scalar) when the config has it (c.qScale): Attend scales
// by 1/sqrt(Dh), Gemma by query_pre_attn_scalar^-1/2, and q is RMS-normed,
// so the factor passes through to the scores.
func hfGemma3QNorm(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	p := parts[0]
	s := float32(1)
	if c.qScale != 0 {
		s = float32(c.qScale)
	}
	t := &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{p.NumElements()}}
	return merged(t, parts, func() ([]byte, error) {
		v, err := p.F32()
		if err != nil {
			return nil, err
		}
		out := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits((x+1)*s))
		}
		return out, nil
	})
}

// hfGemma3Source finds hfGemma3Tensors' names in a checkpoint: a
// Gemma3ForConditionalGeneration's text model is under
// model.language_model. (transformers 4.52 and later) or
// language_model.model. (before); its vision tower is not read.
type hfGemma3Source struct{ tensorSource }

func (s hfGemma3Source) resolve(name string) string {
	c := []string{name}
	if rest, ok := strings.CutPrefix(name, "model."); ok {
		c = append(c, "model.language_model."+rest, "language_model."+name)
	} else if name == "lm_head.weight" {
		c = append(c, "language_model.lm_head.weight")
	}
	for _, n := range c {
		if s.tensorSource.Has(n) {
			return n
		}
	}
	return name
}

func (s hfGemma3Source) Tensor(name string) (*loader.Tensor, error) {
	return s.tensorSource.Tensor(s.resolve(name))
}

func (s hfGemma3Source) Has(name string) bool { return s.tensorSource.Has(s.resolve(name)) }
