package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"wasmllm/loader"
)

// hfConfig is the subset of a Hugging Face config.json the supported
// architectures use.
type hfConfig struct {
	Architectures         []string        `json:"architectures"`
	VocabSize             int             `json:"vocab_size"`
	HiddenSize            int             `json:"hidden_size"`
	NumHiddenLayers       int             `json:"num_hidden_layers"`
	NumAttentionHeads     int             `json:"num_attention_heads"`
	NumKeyValueHeads      int             `json:"num_key_value_heads"`
	HeadDim               int             `json:"head_dim"`
	IntermediateSize      int             `json:"intermediate_size"`
	RMSNormEps            float64         `json:"rms_norm_eps"`
	RopeTheta             float64         `json:"rope_theta"`
	RopeScaling           json.RawMessage `json:"rope_scaling"`
	MaxPositionEmbeddings int             `json:"max_position_embeddings"`
	TieWordEmbeddings     bool            `json:"tie_word_embeddings"`
	NumExperts            int             `json:"num_experts"`
	NumExpertsPerTok      int             `json:"num_experts_per_tok"`
	MoeIntermediateSize   int             `json:"moe_intermediate_size"`
	NormTopkProb          *bool           `json:"norm_topk_prob"`
	DecoderSparseStep     int             `json:"decoder_sparse_step"`
	MLPOnlyLayers         []int           `json:"mlp_only_layers"`
	AttentionBias         bool            `json:"attention_bias"`
	SlidingWindow         *int            `json:"sliding_window"`
	UseSlidingWindow      *bool           `json:"use_sliding_window"`
	HiddenAct             string          `json:"hidden_act"`
}

// hfKey is config.json's key for a canonical Config field.
func hfKey(field string) string {
	switch field {
	case "num_layers":
		return "num_hidden_layers"
	case "num_heads":
		return "num_attention_heads"
	case "num_kv_heads":
		return "num_key_value_heads"
	case "arch":
		return "architectures"
	}
	return field
}

// ParseHFConfig maps a Hugging Face config.json onto a Config.
func ParseHFConfig(file string, data []byte) (*Config, error) {
	ferr := func(field string, err error) error {
		return &loader.FormatError{File: file, Field: field, Offset: -1, Err: err}
	}
	var h hfConfig
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, ferr("json", fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
	}
	if len(h.Architectures) == 0 {
		return nil, ferr("architectures", loader.ErrNotFound)
	}
	c := &Config{
		Vocab: h.VocabSize, Hidden: h.HiddenSize, Layers: h.NumHiddenLayers, Heads: h.NumAttentionHeads,
		KVHeads: h.NumKeyValueHeads, HeadDim: h.HeadDim, FFN: h.IntermediateSize, RMSEps: h.RMSNormEps,
		RopeTheta: h.RopeTheta, MaxContext: h.MaxPositionEmbeddings, TiedEmbeddings: h.TieWordEmbeddings,
		RopeNeoX: true, // Hugging Face keeps Q/K in the half-split layout
	}
	switch arch := h.Architectures[0]; arch {
	case "LlamaForCausalLM":
		c.Arch = ArchLlama
	case "MistralForCausalLM":
		// Mistral is Llama's layout with an optional sliding window.
		c.Arch = ArchLlama
		if h.SlidingWindow != nil {
			c.SlidingWindow = *h.SlidingWindow
		}
	case "Qwen2ForCausalLM":
		// Qwen2's q/k/v projections always have biases (there is no
		// attention_bias key); its sliding window is off unless
		// use_sliding_window says otherwise.
		c.Arch, c.QKVBias = ArchQwen2, true
		if h.UseSlidingWindow != nil && *h.UseSlidingWindow {
			return nil, ferr("use_sliding_window", fmt.Errorf("%w: Qwen2's per-layer sliding window", loader.ErrUnsupported))
		}
	case "Qwen3ForCausalLM":
		c.Arch, c.QKNorm = ArchQwen3, true
	case "Qwen3MoeForCausalLM":
		c.Arch, c.QKNorm = ArchQwen3MoE, true
		c.Experts, c.ExpertsUsed, c.ExpertFFN = h.NumExperts, h.NumExpertsPerTok, h.MoeIntermediateSize
		c.NormTopK = h.NormTopkProb == nil || *h.NormTopkProb
		c.FFN = 0
		if len(h.MLPOnlyLayers) > 0 || h.DecoderSparseStep > 1 {
			return nil, ferr("mlp_only_layers", fmt.Errorf("%w: dense layers inside a MoE model", loader.ErrUnsupported))
		}
	default:
		return nil, ferr("architectures", fmt.Errorf("%w: %q", loader.ErrUnsupported, arch))
	}
	if h.AttentionBias && !c.QKVBias {
		return nil, ferr("attention_bias", fmt.Errorf("%w: attention biases in %s (o_proj's among them)", loader.ErrUnsupported, h.Architectures[0]))
	}
	if h.HiddenAct != "" && h.HiddenAct != "silu" {
		return nil, ferr("hidden_act", fmt.Errorf("%w: %q", loader.ErrUnsupported, h.HiddenAct))
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	if c.SlidingWindow < 0 {
		return nil, ferr("sliding_window", fmt.Errorf("%w: %d", loader.ErrCorrupt, c.SlidingWindow))
	}
	if c.SlidingWindow > 0 && c.MaxContext > 0 && c.SlidingWindow >= c.MaxContext {
		c.SlidingWindow = 0 // a window as long as the context is no window
	}
	if c.RMSEps == 0 {
		c.RMSEps = 1e-6
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	if len(h.RopeScaling) > 0 && string(h.RopeScaling) != "null" {
		var rs struct {
			RopeScaling
			Type string `json:"type"`
		}
		if err := json.Unmarshal(h.RopeScaling, &rs); err != nil {
			return nil, ferr("rope_scaling", fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
		}
		if rs.RopeScaling.Type == "" {
			rs.RopeScaling.Type = rs.Type
		}
		if rs.RopeScaling.Type != "default" {
			s := rs.RopeScaling
			c.RopeScaling = &s
		}
	}
	if err := c.validateIn(file, hfKey); err != nil {
		return nil, err
	}
	return c, nil
}

// tensorSource is any reader of named tensors (safetensors files).
type tensorSource interface {
	Tensor(name string) (*loader.Tensor, error)
}

// FromHF maps a Hugging Face folder's config and tensors onto canonical weights.
func FromHF(dir string) (*Weights, error) {
	c, st, err := openHF(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return fromHFTensors(dir, *c, st)
}

// openHF reads dir's config.json and opens its safetensors files.
func openHF(dir string) (*Config, *loader.Safetensors, error) {
	cfgPath := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	c, err := ParseHFConfig(cfgPath, data)
	if err != nil {
		return nil, nil, err
	}
	st, err := loader.OpenSafetensors(dir)
	if err != nil {
		return nil, nil, err
	}
	return c, st, nil
}

func fromHFTensors(dir string, c Config, st tensorSource) (*Weights, error) {
	w := &Weights{Config: c, Tensors: map[string]*loader.Tensor{}, Source: dir}
	put := func(name string, t *loader.Tensor) { t.Name = name; w.Tensors[name] = t }
	one := func(dst, src string) error {
		t, err := st.Tensor(src)
		if err != nil {
			return err
		}
		put(dst, t)
		return nil
	}
	if err := one(NameEmbed, "model.embed_tokens.weight"); err != nil {
		return nil, err
	}
	if err := one(NameNorm, "model.norm.weight"); err != nil {
		return nil, err
	}
	if !c.TiedEmbeddings {
		if err := one(NameLMHead, "lm_head.weight"); err != nil {
			return nil, err
		}
	}
	for l := 0; l < c.Layers; l++ {
		f := func(s string) string { return fmt.Sprintf(s, l) }
		p := fmt.Sprintf("model.layers.%d.", l)
		for dst, src := range map[string]string{
			NameAttnNorm: "input_layernorm.weight", NameAttnOut: "self_attn.o_proj.weight", NameFFNNorm: "post_attention_layernorm.weight",
		} {
			if err := one(f(dst), p+src); err != nil {
				return nil, err
			}
		}
		parts := make([]*loader.Tensor, 3)
		for i, s := range []string{"q", "k", "v"} {
			t, err := st.Tensor(p + "self_attn." + s + "_proj.weight")
			if err != nil {
				return nil, err
			}
			parts[i] = t
		}
		qkv, err := concatRows(f(NameQKV), parts...)
		if err != nil {
			return nil, err
		}
		put(f(NameQKV), qkv)
		if c.QKVBias {
			biases := make([]*loader.Tensor, 3) // not parts: a lazy merge keeps it
			for i, s := range []string{"q", "k", "v"} {
				t, err := st.Tensor(p + "self_attn." + s + "_proj.bias")
				if err != nil {
					return nil, err
				}
				biases[i] = t
			}
			bias, err := concatBias(f(NameQKVBias), biases...)
			if err != nil {
				return nil, err
			}
			put(f(NameQKVBias), bias)
		}
		if c.QKNorm {
			if err := one(f(NameQNorm), p+"self_attn.q_norm.weight"); err != nil {
				return nil, err
			}
			if err := one(f(NameKNorm), p+"self_attn.k_norm.weight"); err != nil {
				return nil, err
			}
		}
		if !c.MoE() {
			gate, err := st.Tensor(p + "mlp.gate_proj.weight")
			if err != nil {
				return nil, err
			}
			up, err := st.Tensor(p + "mlp.up_proj.weight")
			if err != nil {
				return nil, err
			}
			gu, err := concatRows(f(NameGateUp), gate, up)
			if err != nil {
				return nil, err
			}
			put(f(NameGateUp), gu)
			if err := one(f(NameDown), p+"mlp.down_proj.weight"); err != nil {
				return nil, err
			}
			continue
		}
		if err := one(f(NameRouter), p+"mlp.gate.weight"); err != nil {
			return nil, err
		}
		var gateUps, downs []*loader.Tensor
		for e := 0; e < c.Experts; e++ {
			ep := fmt.Sprintf("%smlp.experts.%d.", p, e)
			var ts [3]*loader.Tensor
			for i, s := range []string{"gate_proj", "up_proj", "down_proj"} {
				t, err := st.Tensor(ep + s + ".weight")
				if err != nil {
					return nil, err
				}
				ts[i] = t
			}
			gu, err := concatRows(ep+"gate_up", ts[0], ts[1])
			if err != nil {
				return nil, err
			}
			gateUps = append(gateUps, gu)
			downs = append(downs, ts[2])
		}
		gu, err := stackExperts(f(NameGateUpExps), gateUps)
		if err != nil {
			return nil, err
		}
		dn, err := stackExperts(f(NameDownExps), downs)
		if err != nil {
			return nil, err
		}
		put(f(NameGateUpExps), gu)
		put(f(NameDownExps), dn)
	}
	if err := w.Check(); err != nil {
		return nil, err
	}
	return w, nil
}
