package model_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/fixtures"
	"wasmllm/loader"
	"wasmllm/model"
)

// phi3HFFolder writes tiny-phi4mini-q4_0 as a Hugging Face Phi3ForCausalLM
// folder: its weights exactly dequantised to F32 under transformers'
// names (qkv_proj and gate_up_proj fused as stored), and a config.json with
// Phi-4-mini's keys (partial_rotary_factor, original_max_position_embeddings
// at the top level, rope_scaling longrope with the factor lists,
// sliding_window, tied embeddings). llama.cpp's exact golden is of the
// exactly dequantised weights, so the folder must give it too.
func phi3HFFolder(t *testing.T, edit func(cfg map[string]any)) string {
	t.Helper()
	g, err := loader.ReadGGUF(phi3Dir + "/models/tiny-phi4mini-q4_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
	for l := range 3 {
		for gg, hf := range map[string]string{"attn_norm": "input_layernorm", "attn_qkv": "self_attn.qkv_proj", "attn_output": "self_attn.o_proj",
			"ffn_norm": "post_attention_layernorm", "ffn_up": "mlp.gate_up_proj", "ffn_down": "mlp.down_proj"} {
			names[fmt.Sprintf("blk.%d.%s.weight", l, gg)] = fmt.Sprintf("model.layers.%d.%s.weight", l, hf)
		}
	}
	factors := map[string][]float32{}
	var tensors []*loader.Tensor
	for i := range g.Tensors {
		src := g.TensorAt(i)
		f, err := src.F32()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(src.Name, "rope_factors_") {
			factors[src.Name] = f
			continue
		}
		name, ok := names[src.Name]
		if !ok {
			t.Fatalf("no Hugging Face name for %s", src.Name)
		}
		data := make([]byte, 4*len(f))
		for j, v := range f {
			binary.LittleEndian.PutUint32(data[4*j:], math.Float32bits(v))
		}
		tensors = append(tensors, &loader.Tensor{Name: name, DType: loader.F32, Shape: src.Shape, Data: data})
	}
	dir := t.TempDir()
	st, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fixtures.WriteSafetensors(st, tensors, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"architectures": []string{"Phi3ForCausalLM"}, "model_type": "phi3", "vocab_size": 512, "hidden_size": 128,
		"num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 256,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 8192, "original_max_position_embeddings": 256,
		"partial_rotary_factor": 0.75, "tie_word_embeddings": true, "hidden_act": "silu", "sliding_window": 262144,
		"rope_scaling": map[string]any{"type": "longrope", "short_factor": factors["rope_factors_short.weight"], "long_factor": factors["rope_factors_long.weight"]},
	}
	if edit != nil {
		edit(cfg)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPhi3HF: a Phi3ForCausalLM folder loads as the GGUF does (the same
// config but Hugging Face's float64 attention factor, the factor tensors
// from config.json) and gives tiny-phi4mini-q4_0's exact golden.
func TestPhi3HF(t *testing.T) {
	dir := phi3HFFolder(t, nil)
	w, err := model.FromHF(dir)
	if err != nil {
		t.Fatal(err)
	}
	gw := loadWeights(t, phi3Dir+"/models/tiny-phi4mini-q4_0.gguf")
	c, gc := w.Config, gw.Config
	if c.RopeDim != 24 || !c.TiedEmbeddings || !c.LongRoPE() || c.SlidingWindow != 0 ||
		c.RopeScaling.OriginalMaxPositionEmbeddings != 256 || c.RopeScaling.Factor != 32 ||
		math.Abs(c.RopeScaling.AttentionFactor-gc.RopeScaling.AttentionFactor) > 1e-8 {
		t.Errorf("config %+v rope scaling %+v; GGUF's %+v", c, c.RopeScaling, gc.RopeScaling)
	}
	for _, name := range []string{model.NameRopeFactorsShort, model.NameRopeFactorsLong} {
		a, _ := w.Tensors[name].F32()
		b, _ := gw.Tensors[name].F32()
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s = %v, GGUF %v", name, a, b)
		}
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, m, phi3Goldens(t)[0], phi3Goldens(t)[0].Tolerance)
	// The lazy form (the converter's) reads the same factors.
	lw, closeLazy, err := model.FromHFLazy(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLazy()
	for _, name := range []string{model.NameRopeFactorsShort, model.NameRopeFactorsLong, fmt.Sprintf(model.NameQKV, 2)} {
		a, err1 := lw.Tensors[name].F32()
		b, err2 := w.Tensors[name].F32()
		if err1 != nil || err2 != nil || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("lazy %s differs (%v, %v)", name, err1, err2)
		}
	}
}

// TestPhi3HFErrors: a config.json whose LongRoPE or rotary keys do not fit
// is a *loader.FormatError naming the key.
func TestPhi3HFErrors(t *testing.T) {
	for key, edit := range map[string]func(cfg map[string]any){
		"rope_scaling.short_factor": func(cfg map[string]any) {
			cfg["rope_scaling"].(map[string]any)["short_factor"] = []float64{1, 2}
		},
		"rope_scaling.type":                func(cfg map[string]any) { cfg["rope_scaling"].(map[string]any)["type"] = "yarn" },
		"partial_rotary_factor":            func(cfg map[string]any) { cfg["partial_rotary_factor"] = 1.5 },
		"original_max_position_embeddings": func(cfg map[string]any) { delete(cfg, "original_max_position_embeddings") },
	} {
		_, err := model.FromHF(phi3HFFolder(t, edit))
		var fe *loader.FormatError
		if !errors.As(err, &fe) || fe.Field != key {
			t.Errorf("%s: got %v", key, err)
		}
	}
}
