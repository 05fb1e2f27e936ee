package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestGoldenSentencePiece: the Llama-2 SentencePiece vocabulary of
// ggml-vocab-llama-spm.gguf against Google's SentencePiece on 332 strings
// (testdata/tokenizer/llama2-sentencepiece.jsonl.gz, the shared golden
// gzipped). SentencePiece treats "<s>" written in the text as text: that is
// EncodeOptions.SpecialAsText (the engine's default for chat templates and
// prompts parses it as the special token, as Hugging Face and llama.cpp's
// parse_special do); ids_with_special adds the BOS. Decode gives
// SentencePiece's text.
func TestGoldenSentencePiece(t *testing.T) {
	type line struct {
		Text    string  `json:"text"`
		IDs     []int32 `json:"ids"`
		WithBOS []int32 `json:"ids_with_special"`
		Decoded string  `json:"decoded"`
		Case    string  `json:"case"`
	}
	f, err := os.Open(filepath.Join(testdata, "tokenizer", "llama2-sentencepiece.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tk := ggufTok(t, filepath.Join(testdata, "tokenizer", "vocab", "ggml-vocab-llama-spm.gguf"))
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n, bad, badDecode := 0, 0, 0
	for sc.Scan() {
		var g line
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		n++
		if d := diffIDs(tk.mustEncodeOpts(g.Text, EncodeOptions{SpecialAsText: true}), g.IDs); d != "" {
			bad++
			if bad <= 5 {
				t.Errorf("%s %q: ids differ\n%s", g.Case, g.Text, d)
			}
			continue
		}
		if d := diffIDs(tk.mustEncodeOpts(g.Text, EncodeOptions{AddSpecial: true, SpecialAsText: true}), g.WithBOS); d != "" {
			t.Errorf("%s %q: ids with BOS differ\n%s", g.Case, g.Text, d)
		}
		if got := tk.Decode(g.IDs); got != g.Decoded {
			badDecode++
			if badDecode <= 5 {
				t.Errorf("%s: decode %q, SentencePiece %q", g.Case, got, g.Decoded)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 332 {
		t.Errorf("%d strings, want 332", n)
	}
	t.Logf("%d strings: %d ids differ, %d decodes differ", n, bad, badDecode)
}
