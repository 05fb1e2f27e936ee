package model

import (
	"fmt"
	"strconv"
	"strings"

	"wasmllm/loader"
)

// hfQwen35Tensors are Qwen3.5's Hugging Face names of the canonical
// tensors (Qwen3_5ForCausalLM's; hfQwen35Source finds them in a
// ForConditionalGeneration checkpoint and the MTP block's), with llama.cpp's
// transforms (merge_qwen35_hf.go). The MoE's experts may be stored per
// expert or fused (mlp.experts.gate_up_proj (E, 2F, D), whose gate rows
// precede the up rows of each expert as the canonical tensor's do, and
// mlp.experts.down_proj (E, D, F)).
var hfQwen35Tensors = tensorTable{
	NameEmbed:       one("model.embed_tokens.weight"),
	NameNorm:        withConfig(plusOne, "model.norm.weight"),
	NameLMHead:      one("lm_head.weight"),
	NameAttnNorm:    withConfig(plusOne, "model.layers.%d.input_layernorm.weight"),
	NameQKV:         withConfig(gatedQKV, "model.layers.%d.self_attn.q_proj.weight", "model.layers.%d.self_attn.k_proj.weight", "model.layers.%d.self_attn.v_proj.weight"),
	NameQNorm:       withConfig(plusOne, "model.layers.%d.self_attn.q_norm.weight"),
	NameKNorm:       withConfig(plusOne, "model.layers.%d.self_attn.k_norm.weight"),
	NameAttnOut:     one("model.layers.%d.self_attn.o_proj.weight"),
	NameSSMIn:       withConfig(hfSSMIn, "model.layers.%d.linear_attn.in_proj_qkv.weight", "model.layers.%d.linear_attn.in_proj_z.weight", "model.layers.%d.linear_attn.in_proj_b.weight", "model.layers.%d.linear_attn.in_proj_a.weight"),
	NameSSMConv:     withConfig(hfConv, "model.layers.%d.linear_attn.conv1d.weight"),
	NameSSMA:        withConfig(hfALog, "model.layers.%d.linear_attn.A_log"),
	NameSSMDtBias:   withConfig(hfDtBias, "model.layers.%d.linear_attn.dt_bias"),
	NameSSMNorm:     one("model.layers.%d.linear_attn.norm.weight"),
	NameSSMOut:      withConfig(hfOutProj, "model.layers.%d.linear_attn.out_proj.weight"),
	NameFFNNorm:     withConfig(plusOne, "model.layers.%d.post_attention_layernorm.weight"),
	NameRouter:      one("model.layers.%d.mlp.gate.weight"),
	NameGateUpExps:  either(one("model.layers.%d.mlp.experts.gate_up_proj"), perExpert("model.layers.%d.mlp.experts.%d.gate_proj.weight", "model.layers.%d.mlp.experts.%d.up_proj.weight")),
	NameDownExps:    either(one("model.layers.%d.mlp.experts.down_proj"), perExpert("model.layers.%d.mlp.experts.%d.down_proj.weight")),
	NameGateUpShexp: rows("model.layers.%d.mlp.shared_expert.gate_proj.weight", "model.layers.%d.mlp.shared_expert.up_proj.weight"),
	NameDownShexp:   one("model.layers.%d.mlp.shared_expert.down_proj.weight"),
	NameGateShexp:   withConfig(vector, "model.layers.%d.mlp.shared_expert_gate.weight"),
	NameGateUp:      rows("model.layers.%d.mlp.gate_proj.weight", "model.layers.%d.mlp.up_proj.weight"),
	NameDown:        one("model.layers.%d.mlp.down_proj.weight"),
	// The MTP block, as the converter renames it (_Qwen35MtpMixin).
	NameMTPEHProj:   one("model.layers.%d.eh_proj.weight"),
	NameMTPENorm:    withConfig(plusOne, "model.layers.%d.enorm.weight"),
	NameMTPHNorm:    withConfig(plusOne, "model.layers.%d.hnorm.weight"),
	NameMTPHeadNorm: withConfig(plusOne, "model.layers.%d.shared_head.norm.weight"),
}

// hfMTPNames are the MTP block's own tensors in a checkpoint (mtp.*), by
// the name the converter gives them after "model.layers.L.".
var hfMTPNames = map[string]string{
	"eh_proj.weight":          "fc.weight",
	"enorm.weight":            "pre_fc_norm_embedding.weight",
	"hnorm.weight":            "pre_fc_norm_hidden.weight",
	"shared_head.norm.weight": "norm.weight",
}

// hfQwen35Source finds hfQwen35Tensors' names in a checkpoint: a
// ForConditionalGeneration's text model is under model.language_model.,
// and "model.layers.L+i." (L the trunk's layers) is MTP block i, under
// mtp.layers.i. (or model.mtp.), its own tensors under mtp.
type hfQwen35Source struct {
	tensorSource
	layers int
}

// candidates lists the checkpoint names name may have, the most usual
// first.
func (s hfQwen35Source) candidates(name string) []string {
	if rest, ok := strings.CutPrefix(name, "model.layers."); ok {
		idx, tail, _ := strings.Cut(rest, ".")
		if l, err := strconv.Atoi(idx); err == nil && l >= s.layers {
			i := l - s.layers
			mtp := fmt.Sprintf("layers.%d.%s", i, tail)
			if own, ok := hfMTPNames[tail]; ok && i == 0 {
				mtp = own
			}
			return []string{"mtp." + mtp, "model.mtp." + mtp}
		}
	}
	if rest, ok := strings.CutPrefix(name, "model."); ok {
		return []string{name, "model.language_model." + rest}
	}
	return []string{name}
}

func (s hfQwen35Source) resolve(name string) string {
	c := s.candidates(name)
	for _, n := range c {
		if s.tensorSource.Has(n) {
			return n
		}
	}
	return c[0]
}

func (s hfQwen35Source) Tensor(name string) (*loader.Tensor, error) {
	return s.tensorSource.Tensor(s.resolve(name))
}

func (s hfQwen35Source) Has(name string) bool { return s.tensorSource.Has(s.resolve(name)) }

// hfSource is the table and the tensor names of config c's checkpoint.
func hfSource(c *Config, st tensorSource) (tensorTable, tensorSource) {
	switch c.Arch {
	case ArchQwen35, ArchQwen35MoE:
		return hfQwen35Tensors, hfQwen35Source{st, c.Layers}
	case ArchPhi3:
		return hfPhi3Tensors, newHFPhi3Source(c, st)
	case ArchGemma3:
		return hfGemma3Tensors, hfGemma3Source{st}
	}
	if !st.Has("model.embed_tokens.weight") && st.Has("embed_tokens.weight") {
		// saved from the bare LlamaModel/Qwen3Model (Qwen3-Embedding):
		// the same table, read without the "model." prefix
		return hfTensors, hfBareSource{st}
	}
	return hfTensors, st
}

// hfBareSource reads a folder saved from the bare model class (no LM
// head wrapper): "model.X" is stored as "X".
type hfBareSource struct{ st tensorSource }

func (s hfBareSource) name(n string) string {
	if rest, ok := strings.CutPrefix(n, "model."); ok {
		return rest
	}
	return n
}

func (s hfBareSource) Tensor(n string) (*loader.Tensor, error) { return s.st.Tensor(s.name(n)) }
func (s hfBareSource) Has(n string) bool                       { return s.st.Has(s.name(n)) }
