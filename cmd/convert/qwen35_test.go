package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/fixtures"
	"wasmllm/internal/testkit/golden"
	"wasmllm/model"
	"wasmllm/source"
)

// TestCLIQwen35HF converts a Qwen3.5-MoE Hugging Face folder (written from
// the F32 GGUF, the converter's transforms undone; its tokenizer from the
// GGUF) and runs the converted folder against the exact golden.
func TestCLIQwen35HF(t *testing.T) {
	qwen35 := filepath.Join(testdata, "qwen35")
	gguf := filepath.Join(qwen35, "models", "tiny-qwen35moe-f32.gguf")
	hf := filepath.Join(t.TempDir(), "hf")
	if err := fixtures.WriteQwen35HF(gguf, hf, fixtures.Qwen35HF{Multimodal: true, FusedExperts: true}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "moe")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-o", out, "-tokenizer", gguf, hf}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	w, tok, err := source.Load(out, "")
	if err != nil || tok == nil {
		t.Fatalf("loading %s: %v (tokenizer %v)", out, err, tok != nil)
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	g := golden.Read(t, filepath.Join(qwen35, "golden", "tiny-qwen35moe-f32.golden"))
	cache, err := m.NewCache(len(g.Tokens) + len(g.Greedy))
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.Vocab
	logits, err := m.Forward(cache, g.Tokens, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float32, len(g.Tokens)*V)
	if err := m.Backend().ReadF32(logits, row); err != nil {
		t.Fatal(err)
	}
	for p, want := range g.Logits {
		if e, i := golden.RowError(row[p*V:(p+1)*V], want); e > g.Tolerance {
			t.Fatalf("row %d: error %.3g at %d", p, e, i)
		}
	}
	last := row[(len(g.Tokens)-1)*V:]
	for step, want := range g.Greedy {
		id := golden.Argmax(last)
		if id != want {
			t.Fatalf("greedy step %d: %d, want %d", step, id, want)
		}
		logits, err := m.Forward(cache, []int32{id}, len(g.Tokens)+step, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Backend().ReadF32(logits, last); err != nil {
			t.Fatal(err)
		}
	}
}
