package tokenizer

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
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
	for _, pat := range []string{patternLlama3, patternQwen2, patternGPT2, patternO200k} {
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
		// o200k: case changes, marks and modifier letters in both runs, a
		// mark or a space before a word, contractions after either run,
		// slashes after punctuation.
		"HTTPServerError", "getHTTPResponse", "ABCdef", "aBC", "Ǆa ǅa", "e\u0301E\u0301x", "\u0301\u0301a", " \u0301A",
		"ʰAʰ", "中文Abc", "I'M he's THEY'RE x'Ll", "A'd'", "..//\n/", " !/x", "a\r\nb", "x\u0301'S",
	}
	for _, name := range append(slices.Clone(goldenNames), "gpt4o") {
		for _, g := range readJSONL[goldenLine](t, filepath.Join(testdata, "tokenizer", name+".jsonl.gz")) {
			texts = append(texts, g.Text)
		}
	}
	checkSplitters(t, texts)
}

// TestO200kRandom compares the o200k splitter with regexp2 on seeded
// random strings over an alphabet of every class the pattern tells apart:
// lower, upper, title-case, modifier and other letters, marks, digits,
// spaces, CR, LF, slashes, punctuation, apostrophes before contraction
// letters, and an invalid byte.
func TestO200kRandom(t *testing.T) {
	alphabet := []string{"a", "s", "t", "Z", "L", "D", "ǅ", "ʰ", "中", "\u0301", "1", "١", " ", "  ", "\n", "\r", "\t", "/", "!", "'", "\u00a0", "\ufeff", "\xff", "é", "É"}
	r := rand.New(rand.NewPCG(200, 1))
	texts := make([]string, 3000)
	for i := range texts {
		var sb strings.Builder
		for range 1 + r.IntN(12) {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		texts[i] = sb.String()
	}
	fast, _ := knownPattern(patternO200k)
	slow, err := newRegexSplitter(patternO200k, "Removed", true)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, text := range texts {
		if got, want := pieces(fast, text), pieces(slow, text); !slices.Equal(got, want) {
			if bad++; bad <= 10 {
				t.Errorf("text %q:\n got  %q\n want %q", text, got, want)
			}
		}
	}
}
