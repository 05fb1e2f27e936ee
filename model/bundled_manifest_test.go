package model_test

import (
	"slices"
	"testing"
	"wasmllm/internal/testkit/golden"

	"wasmllm/cpu"
	"wasmllm/model"
	"wasmllm/source"
)

// TestBundledModel loads the committed models/stories260K folder the way
// cmd/generate does and checks its tokenizer and the 64-token story golden.
func TestBundledModel(t *testing.T) {
	w, tok, err := source.Load("../models/stories260K", "")
	if err != nil {
		t.Fatal(err)
	}
	if tok == nil {
		t.Fatal("no tokenizer")
	}
	g := golden.Read(t, "../testdata/golden/stories260K.story.golden")
	if ids, err := tok.Encode("Once upon a time", true); err != nil || !slices.Equal(ids, g.Tokens) {
		t.Errorf("prompt encodes to %v (%v), golden %v", ids, err, g.Tokens)
	}
	if len(g.Greedy) != 64 {
		t.Fatalf("golden has %d greedy ids", len(g.Greedy))
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, m, g, g.Tolerance)
	t.Logf("story: %q", tok.Decode(g.Greedy))
}
