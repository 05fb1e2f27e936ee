package grammar_test

import (
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"wasmllm/grammar"
	"wasmllm/tokenizer"
)

// jsonGBNF is a nested JSON shape for the mask benchmarks.
const benchJSON = `root ::= "{" ws "\"name\"" ws ":" ws str ws "," ws "\"tags\"" ws ":" ws "[" ws (str (ws "," ws str)*)? ws "]" ws "," ws "\"n\"" ws ":" ws num ws "}"
str ::= "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])* "\""
num ::= "-"? ([0-9] | [1-9] [0-9]*) ("." [0-9]+)?
ws ::= [ \n]{0,4}`

func loadVocab(tb testing.TB, dir string) *grammar.Vocab {
	tb.Helper()
	if _, err := os.Stat(dir + "/tokenizer.json"); err != nil {
		tb.Skipf("%s: run make testdata", dir)
	}
	tok, err := tokenizer.FromHFDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return grammar.NewVocab(tok.VocabSize(), tok.Piece, tok.EOS(), tok.StripsLeadingSpace())
}

// TestMaskTiming reports (does not assert) mask times per token over a
// random walk of a nested JSON grammar on the Qwen3 and Llama-3 vocabularies.
func TestMaskTiming(t *testing.T) {
	g, err := grammar.Compile(benchJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"../testdata/tokenizer/qwen3", "../testdata/tokenizer/llama3"} {
		v := loadVocab(t, dir)
		rng := rand.New(rand.NewPCG(1, 1))
		words := make([]uint32, v.MaskWords())
		var times []time.Duration
		for sample := 0; sample < 5; sample++ {
			m := g.NewMatcher()
			for step := 0; step < 200 && !m.Done(); step++ {
				t0 := time.Now()
				n := m.Mask(v, words)
				times = append(times, time.Since(t0))
				if n == 0 {
					t.Fatal("dead end")
				}
				// pick a random allowed token, preferring short ones after a while
				var ids []int32
				for i, w := range words {
					for ; w != 0; w &= w - 1 {
						b := 0
						for (w>>b)&1 == 0 {
							b++
						}
						ids = append(ids, int32(i*32+b))
					}
				}
				id := ids[rng.IntN(len(ids))]
				if err := m.AcceptToken(v, id); err != nil {
					t.Fatal(err)
				}
				if m.Ended() {
					break
				}
			}
		}
		slices.Sort(times)
		t.Logf("%s: %d masks, median %v, p90 %v, p99 %v, max %v", dir, len(times), times[len(times)/2], times[len(times)*9/10], times[len(times)*99/100], times[len(times)-1])
	}
}
