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
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"` // nil: the class's default (false; Gemma 3's true)
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
	hfHybridConfig
	hfPhi3Config
	hfGemmaConfig
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
	data, err := flattenTextConfig(data)
	if err != nil {
		return nil, ferr("text_config", fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
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
		RopeTheta: h.RopeTheta, MaxContext: h.MaxPositionEmbeddings, TiedEmbeddings: h.TieWordEmbeddings != nil && *h.TieWordEmbeddings,
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
	case "Phi3ForCausalLM": // Phi-3, Phi-3.5-mini, Phi-4-mini; finished below (phi3)
		c.Arch = ArchPhi3
	case "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration": // the text model; finished below (gemma3)
		c.Arch = ArchGemma3
		if h.SlidingWindow != nil {
			c.SlidingWindow = *h.SlidingWindow
		}
	case "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration":
		if err := h.qwen35(c, arch, ferr); err != nil {
			return nil, err
		}
	default:
		return nil, ferr("architectures", fmt.Errorf("%w: %q", loader.ErrUnsupported, arch))
	}
	if h.AttentionBias && !c.QKVBias {
		return nil, ferr("attention_bias", fmt.Errorf("%w: attention biases in %s (o_proj's among them)", loader.ErrUnsupported, h.Architectures[0]))
	}
	if h.HiddenAct != "" && h.HiddenAct != "silu" && !(c.Arch == ArchGemma3 && h.HiddenAct == "gelu_pytorch_tanh") {
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
	if c.Arch == ArchPhi3 {
		if err := h.phi3(c, ferr); err != nil {
			return nil, err
		}
	}
	if c.Arch == ArchGemma3 {
		if err := h.gemma3(c, ferr); err != nil {
			return nil, err
		}
	}
	if err := c.validateIn(file, hfQwen35Key); err != nil {
		return nil, err
	}
	return c, nil
}

// FromHF maps a Hugging Face folder's config and tensors onto canonical weights.
func FromHF(dir string) (*Weights, error) { return FromHFOptions(dir, LoadOptions{}) }

// FromHFOptions is FromHF reading what o asks for beyond the trunk (a
// Qwen3.5 checkpoint's MTP block).
func FromHFOptions(dir string, o LoadOptions) (*Weights, error) {
	c, st, err := openHF(dir, o)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	table, src := hfSource(c, st)
	return mapTensors(dir, *c, src, table, nil)
}

// openHF reads dir's config.json, as o asks, and opens its safetensors
// files.
func openHF(dir string, o LoadOptions) (*Config, *loader.Safetensors, error) {
	cfgPath := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	c, err := ParseHFConfig(cfgPath, data)
	if err != nil {
		return nil, nil, err
	}
	if err := c.applyLoadOptions(cfgPath, "mtp_num_hidden_layers", o); err != nil {
		return nil, nil, err
	}
	st, err := loader.OpenSafetensors(dir)
	if err != nil {
		return nil, nil, err
	}
	return c, st, nil
}

// hfTensors are Hugging Face's names of the canonical tensors (Llama,
// Mistral, Qwen2, Qwen3 and Qwen3-MoE).
var hfTensors = tensorTable{
	NameEmbed:      one("model.embed_tokens.weight"),
	NameNorm:       one("model.norm.weight"),
	NameLMHead:     one("lm_head.weight"),
	NameAttnNorm:   one("model.layers.%d.input_layernorm.weight"),
	NameQKV:        rows("model.layers.%d.self_attn.q_proj.weight", "model.layers.%d.self_attn.k_proj.weight", "model.layers.%d.self_attn.v_proj.weight"),
	NameQKVBias:    biases("model.layers.%d.self_attn.q_proj.bias", "model.layers.%d.self_attn.k_proj.bias", "model.layers.%d.self_attn.v_proj.bias"),
	NameQNorm:      one("model.layers.%d.self_attn.q_norm.weight"),
	NameKNorm:      one("model.layers.%d.self_attn.k_norm.weight"),
	NameAttnOut:    one("model.layers.%d.self_attn.o_proj.weight"),
	NameFFNNorm:    one("model.layers.%d.post_attention_layernorm.weight"),
	NameRouter:     one("model.layers.%d.mlp.gate.weight"),
	NameGateUpExps: perExpert("model.layers.%d.mlp.experts.%d.gate_proj.weight", "model.layers.%d.mlp.experts.%d.up_proj.weight"),
	NameDownExps:   perExpert("model.layers.%d.mlp.experts.%d.down_proj.weight"),
	NameGateUp:     rows("model.layers.%d.mlp.gate_proj.weight", "model.layers.%d.mlp.up_proj.weight"),
	NameDown:       one("model.layers.%d.mlp.down_proj.weight"),
}
