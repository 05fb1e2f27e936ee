package tokenizer

import (
	"path/filepath"
	"sync"
	"testing"
)

// TestConcurrentEncode encodes from several goroutines at once (run with
// -race); every result must equal the sequential one.
func TestConcurrentEncode(t *testing.T) {
	tk := hfTok(t, "tokenizer/qwen3")
	lines := readJSONL[goldenLine](t, filepath.Join(testdata, "tokenizer", "qwen3.jsonl.gz"))
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(lines); i += 2 {
				if d := diffIDs(tk.mustEncode(lines[i].Text, false), lines[i].IDs); d != "" {
					t.Errorf("goroutine %d, line %d: %s", w, i+1, d)
				}
			}
		}(w)
	}
	wg.Wait()
}

// TestAddedTokenFlags checks lstrip, rstrip and single_word on a small
// vocabulary, with the splits Hugging Face's AddedVocabulary makes.
func TestAddedTokenFlags(t *testing.T) {
	m := newAddedMatcher([]addedToken{
		{text: "<L>", id: 1, lstrip: true},
		{text: "<R>", id: 2, rstrip: true},
		{text: "word", id: 3, singleWord: true},
		{text: "<S>", id: 4, special: true},
	})
	split := func(s string, specialAsText bool) []string {
		var out []string
		m.split(s, false, specialAsText, func(seg string, id int32) {
			if id >= 0 {
				out = append(out, "["+seg+"]")
			} else {
				out = append(out, seg)
			}
		})
		return out
	}
	for _, c := range []struct {
		in   string
		text bool
		want []string
	}{
		{"a  <L> b", false, []string{"a", "[  <L>]", " b"}},
		{"a <R>  b", false, []string{"a ", "[<R>  ]", "b"}},
		{"a word b", false, []string{"a ", "[word]", " b"}},
		{"swords", false, []string{"swords"}},
		{"x<S>y", false, []string{"x", "[<S>]", "y"}},
		{"x<S>y", true, []string{"x<S>y"}},
	} {
		got := split(c.in, c.text)
		if len(got) != len(c.want) {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: got %q, want %q", c.in, got, c.want)
				break
			}
		}
	}
}
