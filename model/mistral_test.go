package model_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/model"
)

// TestMistralHF loads tiny-llama3's Hugging Face folder under a Mistral
// config (MistralForCausalLM, sliding_window 4): it is the Llama layout
// with the window, and meets the Llama golden at the positions the window
// does not cut (the first 4), and not after.
func TestMistralHF(t *testing.T) {
	src, _ := filepath.Abs("../testdata/hf/tiny-llama3")
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "config.json" {
			if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	const window = 4
	cfg["architectures"] = []string{"MistralForCausalLM"}
	cfg["model_type"] = "mistral"
	cfg["sliding_window"] = window
	data, _ = json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := model.FromHF(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w.Config.Arch != model.ArchLlama || w.Config.SlidingWindow != window || w.Config.QKVBias {
		t.Fatalf("config %+v", w.Config)
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	g := golden.Read(t, "../testdata/golden/tiny-llama3-f32.golden")
	cache, err := m.NewCache(len(g.Tokens))
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Forward(cache, g.Tokens, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.Vocab
	all := make([]float32, len(g.Tokens)*V)
	if err := m.Backend().ReadF32(logits, all); err != nil {
		t.Fatal(err)
	}
	for r, want := range g.Logits {
		e, _ := golden.RowError(all[r*V:(r+1)*V], want)
		if inside := r < window; inside != (e <= g.Tolerance) {
			t.Errorf("row %d (inside the window: %v): error %.3g against the Llama golden", r, inside, e)
		}
	}
}
