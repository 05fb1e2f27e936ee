package tokenizer

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func llama2cTok(t testing.TB) *Tokenizer {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdata, "models", "tok512.bin"))
	if err != nil {
		t.Fatal(err)
	}
	ckpt, err := os.ReadFile(filepath.Join(testdata, "models", "stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	// The checkpoint header is 7 int32: dim, hidden, layers, heads,
	// kv heads, vocab size, sequence length.
	vocab := int(int32(binary.LittleEndian.Uint32(ckpt[20:])))
	tk, err := FromLlama2C(data, vocab)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestLlama2C checks tok512.bin against llama2.c's prompt for the story
// golden, llama.cpp's ids for the same vocabulary in stories260K.gguf, and
// the GGUF's token strings and decoding.
func TestLlama2C(t *testing.T) {
	tk := llama2cTok(t)
	if tk.VocabSize() != 512 {
		t.Fatalf("VocabSize = %d, want 512", tk.VocabSize())
	}
	if d := diffIDs(tk.mustEncode("Once upon a time", true), []int32{1, 403, 407, 261, 378}); d != "" {
		t.Errorf("story prompt: %s", d)
	}
	g := readTokenizeGolden(t, "stories260K")
	if d := diffIDs(tk.mustEncode(g.Text, true), g.IDs); d != "" {
		t.Errorf("text %q\n%s", g.Text, d)
	}
	if got := tk.DecodeOpts(g.IDs, DecodeOptions{SkipSpecial: true}); got != g.Text {
		t.Errorf("decode: got %q, want %q", got, g.Text)
	}
	gg := ggufTok(t, filepath.Join(testdata, "models", "stories260K.gguf"))
	for id := int32(llama2cByte0); id < int32(tk.VocabSize()); id++ {
		if want := strings.ReplaceAll(gg.TokenText(id), spmSpace, " "); tk.TokenText(id) != want {
			t.Errorf("token %d: %q, GGUF has %q", id, tk.TokenText(id), want)
		}
		if tk.Decode([]int32{5, id}) != gg.Decode([]int32{5, id}) {
			t.Errorf("token %d decodes to %q, GGUF %q", id, tk.Decode([]int32{5, id}), gg.Decode([]int32{5, id}))
		}
	}
	// llama2.c has no special-token parsing and a text of "" has no tokens.
	if got := tk.mustEncode("", true); len(got) != 1 || got[0] != 1 {
		t.Errorf(`Encode("", true) = %v, want [1]`, got)
	}
}

// TestLlama2CMatchesGGUF cross-checks llama2.c's merge loop on tok512.bin
// against llama.cpp's SentencePiece session on the same vocabulary in
// stories260K.gguf, over every golden string.
func TestLlama2CMatchesGGUF(t *testing.T) {
	tk := llama2cTok(t)
	gg := ggufTok(t, filepath.Join(testdata, "models", "stories260K.gguf"))
	for _, name := range goldenNames {
		for n, g := range readJSONL[goldenLine](t, filepath.Join(testdata, "tokenizer", name+".jsonl.gz")) {
			want := gg.mustEncodeOpts(g.Text, EncodeOptions{AddSpecial: true, SpecialAsText: true})
			if d := diffIDs(tk.mustEncode(g.Text, true), want); d != "" {
				t.Errorf("%s line %d: text %q\n%s", name, n+1, g.Text, d)
			}
		}
	}
}
