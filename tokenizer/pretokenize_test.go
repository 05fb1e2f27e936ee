package tokenizer

import (
	"path/filepath"
	"slices"
	"testing"
)

func pieces(s splitter, text string) []string {
	var out []string
	if err := s.split(text, func(p string) { out = append(out, p) }); err != nil {
		panic(err)
	}
	return out
}

// checkSplitters compares each hand-written splitter with the backtracking
// regex engine running the original pattern.
func checkSplitters(t *testing.T, texts []string) {
	t.Helper()
	for _, pat := range []string{patternLlama3, patternQwen2, patternGPT2} {
		fast, _ := knownPattern(pat)
		slow, err := newRegexSplitter(pat, "Isolated", false)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			got, want := pieces(fast, text), pieces(slow, text)
			if !slices.Equal(got, want) {
				t.Errorf("pattern %d, text %q:\n got  %q\n want %q", fast.kind, text, got, want)
			}
		}
	}
}

// TestSplitterMatchesRegexp2 checks the hand-written pre-tokenizers against
// regexp2 on every golden string and on edge cases.
func TestSplitterMatchesRegexp2(t *testing.T) {
	texts := []string{
		"", " ", "  ", "a  b", " \n ", "\r\n\r\n", "x \n\n y", "a\t\tb", "'S 'LL 'Re", "'ſ", "'x",
		"1234567", "١٢٣٤", "x²³", "\xff\xfeab", "a\xe2\x82b", "  !!\n\n", " 12", "\u00a0\u3000x", "\u0085a",
		"hello\u200dworld", "\ufeff \ufeffx",
	}
	for _, name := range goldenNames {
		for _, g := range readJSONL[goldenLine](t, filepath.Join(testdata, "tokenizer", name+".jsonl.gz")) {
			texts = append(texts, g.Text)
		}
	}
	checkSplitters(t, texts)
}
