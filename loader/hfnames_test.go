package loader

import (
	"fmt"
	"regexp"
)

// ggufName maps a Hugging Face Llama/Qwen3 tensor name to llama.cpp's GGUF
// name, for tests that compare the two sources (experts excepted).
func ggufName(hf string) (string, bool) {
	fixed := map[string]string{
		"model.embed_tokens.weight": "token_embd.weight",
		"model.norm.weight":         "output_norm.weight",
		"lm_head.weight":            "output.weight",
	}
	if g, ok := fixed[hf]; ok {
		return g, true
	}
	m := regexp.MustCompile(`^model\.layers\.(\d+)\.(.+)\.weight$`).FindStringSubmatch(hf)
	if m == nil {
		return "", false
	}
	layer := map[string]string{
		"input_layernorm":          "attn_norm",
		"post_attention_layernorm": "ffn_norm",
		"self_attn.q_proj":         "attn_q",
		"self_attn.k_proj":         "attn_k",
		"self_attn.v_proj":         "attn_v",
		"self_attn.o_proj":         "attn_output",
		"self_attn.q_norm":         "attn_q_norm",
		"self_attn.k_norm":         "attn_k_norm",
		"mlp.gate_proj":            "ffn_gate",
		"mlp.up_proj":              "ffn_up",
		"mlp.down_proj":            "ffn_down",
		"mlp.gate":                 "ffn_gate_inp",
	}
	g, ok := layer[m[2]]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("blk.%s.%s.weight", m[1], g), true
}

// permuteQK is llama.cpp's convert_hf_to_gguf.py permute(): within each of
// nHead heads of rows, row 2i+j of the output is row j*half+i of the input
// (HF's half-split rotary layout to GGUF's interleaved pairs).
func permuteQK(data []byte, rows, rowBytes, nHead int) []byte {
	out := make([]byte, len(data))
	hd := rows / nHead
	half := hd / 2
	for h := 0; h < nHead; h++ {
		for i := 0; i < half; i++ {
			for j := 0; j < 2; j++ {
				dst := h*hd + 2*i + j
				src := h*hd + j*half + i
				copy(out[dst*rowBytes:(dst+1)*rowBytes], data[src*rowBytes:(src+1)*rowBytes])
			}
		}
	}
	return out
}
