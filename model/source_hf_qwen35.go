package model

import (
	"encoding/json"
	"fmt"
	"slices"

	"wasmllm/loader"
)

// hfHybridConfig is what Qwen3.5's config.json (Qwen3_5ForCausalLM,
// Qwen3_5MoeForCausalLM, and their ForConditionalGeneration forms, whose
// text model's keys are under text_config) adds to hfConfig, read as
// llama.cpp's converter reads it (conversion/qwen.py: Qwen3NextModel,
// _Qwen35MRopeMixin, _Qwen35MtpMixin).
type hfHybridConfig struct {
	LayerTypes            []string        `json:"layer_types"`
	FullAttentionInterval *int            `json:"full_attention_interval"`
	LinearConvKernelDim   int             `json:"linear_conv_kernel_dim"`
	LinearKeyHeadDim      int             `json:"linear_key_head_dim"`
	LinearValueHeadDim    int             `json:"linear_value_head_dim"`
	LinearNumKeyHeads     int             `json:"linear_num_key_heads"`
	LinearNumValueHeads   int             `json:"linear_num_value_heads"`
	PartialRotaryFactor   *float64        `json:"partial_rotary_factor"`
	RopeParameters        json.RawMessage `json:"rope_parameters"`
	AttnOutputGate        *bool           `json:"attn_output_gate"`
	SharedExpertFFN       int             `json:"shared_expert_intermediate_size"`
	MTPLayers             int             `json:"mtp_num_hidden_layers"`
}

// hfRopeParameters is transformers' rope_parameters block as Qwen3.5 has
// it.
type hfRopeParameters struct {
	RopeType            string   `json:"rope_type"`
	RopeTheta           float64  `json:"rope_theta"`
	PartialRotaryFactor *float64 `json:"partial_rotary_factor"`
	MropeSection        []int    `json:"mrope_section"`
}

// qwen35DefaultSections is the converter's mrope_section when the config
// has none (_Qwen35MRopeMixin).
var qwen35DefaultSections = []int{11, 11, 10, 0}

// flattenTextConfig moves a config's text_config keys to the top level,
// over the top level's own, as llama.cpp's TextModel does
// ({**hparams, **hparams["text_config"]}). A config without text_config
// is returned as it is.
func flattenTextConfig(data []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	raw, ok := top["text_config"]
	if !ok || string(raw) == "null" {
		return data, nil
	}
	var text map[string]json.RawMessage
	if err := json.Unmarshal(raw, &text); err != nil {
		return nil, err
	}
	for k, v := range text {
		if k == "architectures" {
			continue // the model's class is the top level's
		}
		top[k] = v
	}
	return json.Marshal(top)
}

// qwen35 fills c from a Qwen3.5 config: the trunk's layer types (from
// layer_types, else every full_attention_interval-th layer, default 4),
// the gated attention's partial rotary (head_dim × partial_rotary_factor,
// default 0.25) and IMROPE sections (rope_parameters.mrope_section padded
// to 4, default [11, 11, 10, 0]), the Gated DeltaNet's sizes, and for the
// MoE form its experts and shared expert. mtp_num_hidden_layers is
// remembered for LoadOptions.MTP; the trunk is num_hidden_layers.
func (h *hfConfig) qwen35(c *Config, arch string, ferr func(string, error) error) error {
	bad := func(field string, v any, reason string) error {
		return ferr(field, fmt.Errorf("%w: %w", loader.ErrCorrupt, &ConfigError{Field: field, Value: v, Reason: reason}))
	}
	c.Arch, c.QKNorm, c.AttnOutputGate = ArchQwen35, true, true
	if h.AttnOutputGate != nil && !*h.AttnOutputGate {
		return ferr("attn_output_gate", fmt.Errorf("%w: Qwen3.5 attention without its output gate", loader.ErrUnsupported))
	}
	if arch == "Qwen3_5MoeForCausalLM" || arch == "Qwen3_5MoeForConditionalGeneration" {
		c.Arch = ArchQwen35MoE
		c.Experts, c.ExpertsUsed, c.ExpertFFN = h.NumExperts, h.NumExpertsPerTok, h.MoeIntermediateSize
		c.SharedExpertFFN = h.SharedExpertFFN
		// llama.cpp renormalises qwen35moe's top-k weights whatever the
		// config; a config that says otherwise is followed.
		c.NormTopK = h.NormTopkProb == nil || *h.NormTopkProb
		c.FFN = 0
		if len(h.MLPOnlyLayers) > 0 || h.DecoderSparseStep > 1 {
			return ferr("mlp_only_layers", fmt.Errorf("%w: dense layers inside a MoE model", loader.ErrUnsupported))
		}
	}
	var rp hfRopeParameters
	if len(h.RopeParameters) > 0 && string(h.RopeParameters) != "null" {
		if err := json.Unmarshal(h.RopeParameters, &rp); err != nil {
			return ferr("rope_parameters", fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
		}
		if rp.RopeType != "" && rp.RopeType != "default" {
			return ferr("rope_parameters.rope_type", fmt.Errorf("%w: %q", loader.ErrUnsupported, rp.RopeType))
		}
		if c.RopeTheta == 0 {
			c.RopeTheta = rp.RopeTheta
		}
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	factor := 0.25
	if h.PartialRotaryFactor != nil {
		factor = *h.PartialRotaryFactor
	} else if rp.PartialRotaryFactor != nil {
		factor = *rp.PartialRotaryFactor
	}
	if !(factor > 0 && factor <= 1) {
		return bad("partial_rotary_factor", factor, "want a value in (0, 1]")
	}
	if c.RopeDim = int(float64(c.HeadDim) * factor); c.RopeDim == c.HeadDim {
		c.RopeDim = 0
	}
	sec := slices.Clone(qwen35DefaultSections)
	if rp.MropeSection != nil {
		if len(rp.MropeSection) > 4 {
			return bad("rope_parameters.mrope_section", rp.MropeSection, "more than 4 sections")
		}
		sec = make([]int, 4)
		copy(sec, rp.MropeSection)
	}
	c.RopeSections = sec
	if h.LinearKeyHeadDim != h.LinearValueHeadDim {
		// llama.cpp's ssm.state_size is both (a single S × S state per head).
		return bad("linear_value_head_dim", h.LinearValueHeadDim, fmt.Sprintf("differs from linear_key_head_dim %d", h.LinearKeyHeadDim))
	}
	c.LinearConvKernel, c.LinearKeyHeads, c.LinearValueHeads, c.LinearHeadDim =
		h.LinearConvKernelDim, h.LinearNumKeyHeads, h.LinearNumValueHeads, h.LinearKeyHeadDim
	if c.Layers < 1 || c.Layers > MaxLayers {
		return bad("num_hidden_layers", c.Layers, fmt.Sprintf("want 1..%d", MaxLayers))
	}
	every := 4
	if h.FullAttentionInterval != nil {
		if every = *h.FullAttentionInterval; every < 1 {
			return bad("full_attention_interval", every, "want a positive interval")
		}
	}
	c.LayerTypes = make([]string, c.Layers)
	for l := range c.LayerTypes {
		c.LayerTypes[l] = LayerLinearAttention
		if (l+1)%every == 0 {
			c.LayerTypes[l] = LayerFullAttention
		}
	}
	if h.LayerTypes != nil {
		if !slices.Equal(h.LayerTypes, c.LayerTypes) && h.FullAttentionInterval != nil {
			// llama.cpp writes full_attention_interval only: a config whose
			// layer_types say otherwise would convert wrongly there.
			return bad("layer_types", h.LayerTypes, fmt.Sprintf("disagrees with full_attention_interval %d", every))
		}
		c.LayerTypes = slices.Clone(h.LayerTypes)
	}
	if h.MTPLayers < 0 || h.MTPLayers > MaxLayers {
		return bad("mtp_num_hidden_layers", h.MTPLayers, fmt.Sprintf("want 0..%d", MaxLayers))
	}
	c.mtpAvailable = h.MTPLayers
	return nil
}

// hfQwen35Key is config.json's key for a canonical Config field of the
// hybrid families.
func hfQwen35Key(field string) string {
	switch field {
	case "rope_dim":
		return "partial_rotary_factor"
	case "rope_sections":
		return "rope_parameters.mrope_section"
	case "mtp_num_hidden_layers", "layer_types":
		return field
	}
	return hfKey(field)
}
