package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"wasmllm/loader"
)

// TestQwen35Pretokenizer runs llama.cpp's tokenization of the tiny
// Qwen3.5 vocab (pre-tokenizer qwen35: combining marks join letters, no
// NFC) on its 7 cases: a decomposed accent is one token with its letter
// where qwen2's regex splits it off.
func TestQwen35Pretokenizer(t *testing.T) {
	path := "../testdata/qwen35/golden/tokenize/tiny-qwen35.cases.jsonl"
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tok *Tokenizer
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var c struct {
			Model        string  `json:"model"`
			Text         string  `json:"text"`
			AddSpecial   bool    `json:"add_special"`
			ParseSpecial bool    `json:"parse_special"`
			IDs          []int32 `json:"ids"`
			Qwen2IDs     []int32 `json:"ids_if_qwen2_pretokenizer"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if tok == nil {
			g, err := loader.ReadGGUF(filepath.Join(filepath.Dir(path), c.Model))
			if err != nil {
				t.Fatal(err)
			}
			if tok, err = FromGGUF(g); err != nil {
				t.Fatal(err)
			}
		}
		got, err := tok.EncodeOpts(c.Text, EncodeOptions{AddSpecial: c.AddSpecial, SpecialAsText: !c.ParseSpecial})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.IDs) {
			t.Errorf("%q: %v, want %v (qwen2's regex gives %v)", c.Text, got, c.IDs, c.Qwen2IDs)
		}
		n++
	}
	if n != 7 {
		t.Errorf("%d cases, want 7", n)
	}
}
