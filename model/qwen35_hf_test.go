package model_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/fixtures"
	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/source"
)

// qwen35HFCases are the Hugging Face layouts a Qwen3.5 checkpoint comes
// in, each written from an F32 GGUF with the converter's transforms undone.
var qwen35HFCases = []struct {
	name, gguf string
	o          fixtures.Qwen35HF
}{
	{"Qwen3_5ForCausalLM", "tiny-qwen35-f32.gguf", fixtures.Qwen35HF{}},
	{"Qwen3_5ForConditionalGeneration", "tiny-qwen35-mtp-f32.gguf", fixtures.Qwen35HF{Multimodal: true}},
	{"Qwen3_5MoeForCausalLM", "tiny-qwen35moe-f32.gguf", fixtures.Qwen35HF{}},
	{"Qwen3_5MoeForConditionalGeneration-fused", "tiny-qwen35moe-f32.gguf", fixtures.Qwen35HF{Multimodal: true, FusedExperts: true}},
}

// TestQwen35HF loads each layout through the normal Hugging Face source
// path: every canonical tensor is the GGUF's bit for bit (ssm_a, whose
// A_log was rounded to f32 between log and exp, within 1e-6 relative),
// the logits agree with the
// GGUF's, and the exact golden passes.
func TestQwen35HF(t *testing.T) {
	for _, c := range qwen35HFCases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := qwen35Dir + "/models/" + c.gguf
			if err := fixtures.WriteQwen35HF(src, dir, c.o); err != nil {
				t.Fatal(err)
			}
			hf, err := source.Weights(dir)
			if err != nil {
				t.Fatal(err)
			}
			gg := loadWeights(t, src)
			if !slices.Equal(hf.Names(), gg.Names()) {
				t.Fatalf("tensors %v, GGUF's %v", hf.Names(), gg.Names())
			}
			for _, name := range gg.Names() {
				a, err := hf.Tensors[name].F32()
				if err != nil {
					t.Fatal(err)
				}
				b, _ := gg.Tensors[name].F32()
				if !slices.Equal(hf.Tensors[name].Shape, gg.Tensors[name].Shape) {
					t.Errorf("%s: shape %v, GGUF's %v", name, hf.Tensors[name].Shape, gg.Tensors[name].Shape)
					continue
				}
				for i := range a {
					if a[i] != b[i] && !(strings.HasSuffix(name, ".ssm_a") && math.Abs(float64(a[i]-b[i])) <= 1e-6*math.Abs(float64(b[i]))) {
						t.Errorf("%s[%d] = %v, GGUF's %v", name, i, a[i], b[i])
						break
					}
				}
			}
			base := strings.Replace(c.gguf, "-mtp", "", 1)
			g := golden.Read(t, qwen35Dir+"/golden/"+strings.TrimSuffix(base, ".gguf")+".golden")
			var rows [2][]float32
			for i, w := range []*model.Weights{hf, gg} {
				m, err := model.Build(cpu.New(0), w)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					checkGolden(t, m, g, g.Tolerance)
				}
				cache, err := m.NewCache(len(g.Tokens))
				if err != nil {
					t.Fatal(err)
				}
				rows[i] = forwardAll(t, m, cache, g.Tokens, 0)
			}
			if e, i := golden.RowError(rows[0], rows[1]); e > 1e-6 {
				t.Errorf("HF against GGUF: relative error %.3g at %d", e, i)
			}
		})
	}
}

// TestQwen35HFMTP loads the MTP block from a checkpoint's mtp.* tensors
// when asked: the same block as the GGUF's, which a default load skips.
func TestQwen35HFMTP(t *testing.T) {
	dir := t.TempDir()
	src := qwen35Dir + "/models/tiny-qwen35-mtp-f32.gguf"
	if err := fixtures.WriteQwen35HF(src, dir, fixtures.Qwen35HF{}); err != nil {
		t.Fatal(err)
	}
	hf, err := model.FromHFOptions(dir, model.LoadOptions{MTP: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := loader.ReadGGUF(src)
	if err != nil {
		t.Fatal(err)
	}
	gg, err := model.FromGGUFOptions(g, model.LoadOptions{MTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if hf.Config.MTPLayers != 1 || gg.Config.MTPLayers != 1 {
		t.Fatalf("MTP layers %d (HF), %d (GGUF)", hf.Config.MTPLayers, gg.Config.MTPLayers)
	}
	for _, name := range []string{"blk.4.nextn.eh_proj.weight", "blk.4.nextn.enorm.weight", "blk.4.nextn.hnorm.weight",
		"blk.4.nextn.shared_head_norm.weight", "blk.4.attn_qkv.weight", "blk.4.attn_q_norm.weight", "blk.4.ffn_norm.weight", "blk.4.ffn_gate_up.weight"} {
		a, err := hf.Tensors[name].F32()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := gg.Tensors[name].F32()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s differs from the GGUF's", name)
		}
	}
	// Without the option, neither loads it; with it, a file without the
	// block says so.
	plain, err := model.FromHF(dir)
	if err != nil || plain.Config.MTPLayers != 0 || plain.Tensors["blk.4.nextn.eh_proj.weight"] != nil {
		t.Fatalf("default load: %v, MTP layers %d", err, plain.Config.MTPLayers)
	}
	nog, err := loader.ReadGGUF(qwen35Dir + "/models/tiny-qwen35-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := model.FromGGUFOptions(nog, model.LoadOptions{MTP: true}); !errors.Is(err, model.ErrNoMTP) {
		t.Errorf("MTP from a file without it: %v", err)
	}
}

// TestQwen35HFConfigErrors: config values the converter could not map
// are refused, naming config.json's key.
func TestQwen35HFConfigErrors(t *testing.T) {
	dir := t.TempDir()
	if err := fixtures.WriteQwen35HF(qwen35Dir+"/models/tiny-qwen35-f32.gguf", dir, fixtures.Qwen35HF{}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, field string }{
		{`"linear_value_head_dim": 32`, `"linear_value_head_dim": 64`, "linear_value_head_dim"},
		{`"full_attention_interval": 4`, `"full_attention_interval": 2`, "layer_types"},
		{`"rope_type": "default"`, `"rope_type": "yarn"`, "rope_parameters.rope_type"},
		{`"linear_num_value_heads": 4`, `"linear_num_value_heads": 3`, "linear_num_value_heads"},
		{`"attn_output_gate": true`, `"attn_output_gate": false`, "attn_output_gate"},
	} {
		bad := strings.Replace(string(good), c.from, c.to, 1)
		if bad == string(good) {
			t.Fatalf("%q not in config.json", c.from)
		}
		_, err := model.ParseHFConfig("config.json", []byte(bad))
		var fe *loader.FormatError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: got %v, want an error naming %s", c.to, err, c.field)
		}
	}
}
