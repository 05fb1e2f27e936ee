package tokenizer

import (
	"path/filepath"
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
		t.Run(name, func(t *testing.T) {
			tk := hfTok(t, filepath.Join("tokenizer", name))
			lines := readJSONL[goldenLine](t, filepath.Join(testdata, "tokenizer", name+".jsonl"))
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
		})
	}
}
