package engine

import (
	"os"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// heldout reads testdata/perplexity/heldout.txt as stories260K's ids,
// BOS first, cut to n.
func heldout(t *testing.T, e *Engine, n int) []int32 {
	t.Helper()
	text, err := os.ReadFile("../testdata/perplexity/heldout.txt")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := e.Tok.Encode(string(text), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) < n {
		t.Fatalf("the held-out text is %d tokens, want %d", len(ids), n)
	}
	return ids[:n]
}

// TestPerplexityKV: stories260K (the one trained model) teacher-forced over
// held-out text filling its context of 512, with an f32, an f16 and a q8
// KV cache on the CPU engine: q8 within +0.5% of f32 (issue 41), f16
// closer still.
func TestPerplexityKV(t *testing.T) {
	e, err := Load(stories, cpu.New(0), LoadOptions{Options: Options{Context: 512}})
	if err != nil {
		t.Fatal(err)
	}
	ids := heldout(t, e, 512)
	res := map[loader.DType]*Perplexity{}
	for _, kv := range []loader.DType{loader.F32, loader.F16, model.KVQ8} {
		p, err := EvalPerplexity(e.Model, kv, ids, 128)
		if err != nil {
			t.Fatal(err)
		}
		res[kv] = p
		t.Logf("%s KV: perplexity %.4f (NLL %.5f over %d tokens)", model.KVDTypeName(kv), p.PPL, p.NLL, p.Tokens-1)
	}
	f32 := res[loader.F32].PPL
	if f32 < 1.5 || f32 > 30 { // a trained model reads a story far better than chance (512)
		t.Errorf("f32 perplexity %.3f", f32)
	}
	if r := res[model.KVQ8].PPL / f32; r > 1.005 || r < 0.995 {
		t.Errorf("q8/f32 perplexity %.5f, want within 0.5%%", r)
	}
	if r := res[loader.F16].PPL / f32; r > 1.001 || r < 0.999 {
		t.Errorf("f16/f32 perplexity %.5f, want within 0.1%%", r)
	}
	// Chunking changes only rounding: one chunk of 511 gives the same.
	one, err := EvalPerplexity(e.Model, loader.F32, ids, 511)
	if err != nil {
		t.Fatal(err)
	}
	if d := one.PPL/f32 - 1; d > 1e-4 || d < -1e-4 {
		t.Errorf("one chunk %.5f, chunks of 128 %.5f", one.PPL, f32)
	}
}
