package model_test

import (
	"testing"
	"wasmllm/internal/testkit/golden"

	"wasmllm/cpu"
	"wasmllm/model"
	"wasmllm/source"
)

// TestTwoSources loads one model from two formats and checks that both meet
// the same golden file and agree with each other position by position. The
// MoE case has no golden of its own: its F32 weights are the q8_0 file
// dequantised (tiny-qwen3moe-dq8; the F32 original is in ../shared), whose
// goldens check the MoE's numerics; here the Hugging Face folder's
// mapping (experts split per expert) must give the GGUF's logits.
func TestTwoSources(t *testing.T) {
	cases := []struct{ a, b, golden string }{
		{"../testdata/models/stories260K.gguf", "../testdata/models/stories260K.bin", "../testdata/golden/stories260K.golden"},
		{"../testdata/models/tiny-llama3-f32.gguf", "../testdata/hf/tiny-llama3", "../testdata/golden/tiny-llama3-f32.long.golden"},
		{"../testdata/models/tiny-qwen3-f32.gguf", "../testdata/hf/tiny-qwen3", "../testdata/golden/tiny-qwen3-f32.long.golden"},
		{"../testdata/models/tiny-qwen3moe-dq8.gguf", "../testdata/hf/tiny-qwen3moe", ""},
		// Qwen2: q/k/v biases merged from three GGUF tensors and from three
		// safetensors ones must agree.
		{"../testdata/qwen2/models/tiny-qwen2-f32.gguf", "../testdata/qwen2/hf/tiny-qwen2", "../testdata/qwen2/golden/tiny-qwen2-f32.golden"},
	}
	for _, c := range cases {
		t.Run(c.b, func(t *testing.T) {
			tokens := []int32{1, 17, 230, 5, 99, 42, 7, 300, 11, 64, 2, 128}
			var g *golden.File
			if c.golden != "" {
				g = golden.Read(t, c.golden)
				tokens = g.Tokens
			}
			var rows [2][]float32
			for i, path := range []string{c.a, c.b} {
				w, err := source.Weights(path)
				if err != nil {
					t.Fatal(err)
				}
				m, err := model.Build(cpu.New(0), w)
				if err != nil {
					t.Fatal(err)
				}
				if g != nil {
					checkGolden(t, m, g, g.Tolerance)
				}
				cache, _ := m.NewCache(len(tokens))
				logits, err := m.Forward(cache, tokens, 0, true)
				if err != nil {
					t.Fatal(err)
				}
				rows[i] = make([]float32, len(tokens)*m.Config.Vocab)
				m.Backend().ReadF32(logits, rows[i])
			}
			if e, i := golden.RowError(rows[1], rows[0]); e > 1e-5 {
				t.Errorf("%s vs %s: relative error %.3g at %d: %v vs %v", c.b, c.a, e, i, rows[1][i], rows[0][i])
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	for _, path := range []string{"../testdata/tokenizer/qwen3.chat.jsonl", "../testdata", "missing.gguf"} {
		if _, err := source.Weights(path); err == nil {
			t.Errorf("Load(%s): no error", path)
		} else {
			t.Logf("Load(%s): %v", path, err)
		}
	}
}
