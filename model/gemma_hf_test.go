package model_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/fixtures"
	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
)

// gemma3HFName is the Hugging Face name of a gemma3 GGUF tensor, and
// whether it is a norm weight (stored as w there, 1 + w in the GGUF), as
// llama.cpp's converter maps them (Gemma3Model).
func gemma3HFName(name string) (string, bool) {
	switch name {
	case "token_embd.weight":
		return "model.embed_tokens.weight", false
	case "output_norm.weight":
		return "model.norm.weight", true
	}
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return "", false
	}
	l, tail, _ := strings.Cut(rest, ".")
	hf := map[string]string{
		"attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
		"attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
		"attn_output.weight": "self_attn.o_proj.weight", "attn_q_norm.weight": "self_attn.q_norm.weight",
		"attn_k_norm.weight": "self_attn.k_norm.weight", "post_attention_norm.weight": "post_attention_layernorm.weight",
		"ffn_norm.weight": "pre_feedforward_layernorm.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
		"ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight",
		"post_ffw_norm.weight": "post_feedforward_layernorm.weight",
	}[tail]
	if hf == "" {
		return "", false
	}
	return "model.layers." + l + "." + hf, strings.HasSuffix(tail, "norm.weight")
}

// gemma3HFFolder writes tiny-gemma3-q4_0 as a Hugging Face folder: its
// weights dequantised to F32 under Hugging Face's names (norms as w), with
// prefix before "layers."/"embed_tokens."/"norm." (a
// ForConditionalGeneration's text model), and config.json.
func gemma3HFFolder(t *testing.T, gguf, arch, prefix string, config map[string]any) string {
	t.Helper()
	g, err := loader.ReadGGUF(gguf)
	if err != nil {
		t.Fatal(err)
	}
	var ts []*loader.Tensor
	for i := range g.Tensors {
		src := g.TensorAt(i)
		name, norm := gemma3HFName(src.Name)
		if name == "" {
			t.Fatalf("%s: no Hugging Face name", src.Name)
		}
		v, err := src.F32()
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 4*len(v))
		for j, x := range v {
			if norm {
				x--
			}
			binary.LittleEndian.PutUint32(data[4*j:], math.Float32bits(x))
		}
		ts = append(ts, &loader.Tensor{Name: strings.Replace(name, "model.", prefix, 1), DType: loader.F32, Shape: src.Shape, Data: data})
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fixtures.WriteSafetensors(f, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	top := map[string]any{"architectures": []string{arch}}
	if arch == "Gemma3ForConditionalGeneration" {
		top["text_config"] = config
	} else {
		for k, v := range config {
			top[k] = v
		}
	}
	raw, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGemma3HF loads tiny-gemma3-q4_0 as a Hugging Face folder
// (Gemma3ForCausalLM, and Gemma3ForConditionalGeneration with its text
// model under text_config and model.language_model.): norms read as
// 1 + w, post_attention_layernorm the sandwich norm, pre_feedforward_layernorm
// the MLP's pre-norm, the local layers from sliding_window_pattern,
// rope_local_base_freq, the global layers' linear scaling, tied
// embeddings by default; it matches the GGUF's golden (its weights are
// the GGUF's, dequantised) and the GGUF's config.
func TestGemma3HF(t *testing.T) {
	gg := golden.Read(t, gemmaDir+"/golden/tiny-gemma3-q4_0.golden")
	want := loadWeights(t, gg.ModelPath()).Config
	config := map[string]any{
		"vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
		"head_dim": 32, "intermediate_size": 128, "rms_norm_eps": 1e-6, "rope_theta": 1e6, "rope_local_base_freq": 1e4,
		"sliding_window": 5, "sliding_window_pattern": 6, "rope_scaling": map[string]any{"rope_type": "linear", "factor": 8.0},
		"query_pre_attn_scalar": 32, "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 131072,
		"final_logit_softcapping": nil, "attn_logit_softcapping": nil,
	}
	for _, c := range []struct{ arch, prefix string }{
		{"Gemma3ForCausalLM", "model."},
		{"Gemma3ForConditionalGeneration", "model.language_model."},
	} {
		t.Run(c.arch, func(t *testing.T) {
			dir := gemma3HFFolder(t, gg.ModelPath(), c.arch, c.prefix, config)
			w, err := model.FromHF(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := w.Config
			if got.Arch != model.ArchGemma3 || !got.TiedEmbeddings || got.SlidingWindow != want.SlidingWindow || got.RopeLocalTheta != want.RopeLocalTheta ||
				strings.Join(got.LayerTypes, ",") != strings.Join(want.LayerTypes, ",") || got.RopeScaling == nil || *got.RopeScaling != *want.RopeScaling {
				t.Fatalf("config %+v, want %+v", got, want)
			}
			m, err := model.Build(cpu.New(0), w)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, m, gg, gg.Tolerance)
		})
	}
}
