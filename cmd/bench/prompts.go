package main

import (
	"cmp"
	"fmt"
	"strings"

	"wasmllm/loader"
	"wasmllm/tokenizer"
)

// corpus is the prompts' text: plain ASCII English, so every test
// tokenizer encodes it, repeated for long prompts.
const corpus = `Once upon a time, in a small town by the sea, there lived a girl named Lily who loved to collect shells. ` +
	`Every morning she walked along the beach with her dog, Max, and filled a red bucket with the prettiest ones she could find. ` +
	`One day a storm came and the waves grew tall and loud. Lily watched from her window as the rain fell on the roofs. ` +
	`When the sun came back, she ran outside and found something shiny in the sand: an old brass key with a green ribbon tied to it. ` +
	`She asked her grandfather what it might open. He smiled, scratched his beard, and told her about a chest his own father had hidden ` +
	`near the lighthouse many years ago. Together they packed sandwiches, a map and a lamp, and set off along the cliffs. ` +
	`The path was steep and narrow, and the wind pulled at their coats, but they kept going until they reached the old stone tower. `

// promptSet is one prompt length's prompts: the text each engine is given
// (wllama takes text) and the ids our tokenizer makes of it, BOS included
// where the model adds one. Texts has one prompt per repeat, each starting
// further into the corpus, so no engine can reuse a cached prefix.
type promptSet struct {
	Len   int
	Texts []string
	IDs   [][]int32
	Runs  int // how many times each engine runs it (the texts in turn)
}

// shortRuns is how many times more the shortest prompts (16 tokens, a
// millisecond or two of prefill on a tiny model, where one timer tick or
// garbage collection moves a run by half) run than the others on the CPU
// engines and wllama, so their medians are as steady.
const shortRuns = 3

// runs is the most times any of ps runs.
func runs(ps []promptSet) int {
	n := 1
	for _, p := range ps {
		n = max(n, p.Runs)
	}
	return n
}

// buildPrompts finds, for each length, texts that the model's tokenizer
// encodes to exactly that many tokens.
func buildPrompts(tok *tokenizer.Tokenizer, lens []int, repeats int) ([]promptSet, error) {
	text := strings.Repeat(corpus, 1+lens[len(lens)-1]/16)
	var out []promptSet
	for _, n := range lens {
		ps := promptSet{Len: n, Runs: max(repeats, 1)}
		for rep := range max(repeats, 1) {
			// Start each repeat at a different sentence.
			src := text
			for range rep {
				if i := strings.Index(src, ". "); i >= 0 {
					src = src[i+2:]
				}
			}
			t, ids, err := exactPrefix(tok, src, n)
			if err != nil {
				return nil, err
			}
			ps.Texts, ps.IDs = append(ps.Texts, t), append(ps.IDs, ids)
		}
		out = append(out, ps)
	}
	return out, nil
}

// exactPrefix returns the shortest prefix of src that encodes to n tokens.
func exactPrefix(tok *tokenizer.Tokenizer, src string, n int) (string, []int32, error) {
	var err error
	count := func(l int) int {
		ids, e := tok.Encode(src[:l], true)
		err = cmp.Or(err, e)
		return len(ids)
	}
	if count(len(src)) < n {
		return "", nil, fmt.Errorf("the corpus makes fewer than %d tokens", n)
	}
	lo, hi := 0, len(src) // count(lo) < n <= count(hi)
	for hi-lo > 1 && err == nil {
		mid := (lo + hi) / 2
		if count(mid) >= n {
			hi = mid
		} else {
			lo = mid
		}
	}
	if err != nil {
		return "", nil, err
	}
	// Token counts are not quite monotonic in the prefix; look nearby.
	for l := hi; l < min(len(src), hi+64); l++ {
		ids, err := tok.Encode(src[:l], true)
		if err != nil {
			return "", nil, err
		}
		if len(ids) == n {
			return src[:l], ids, nil
		}
	}
	return "", nil, fmt.Errorf("no prefix of the corpus encodes to exactly %d tokens", n)
}

// banNonASCII returns the ids whose text is not plain ASCII (byte tokens
// of UTF-8 sequences among them): wllama stops for good on invalid UTF-8
// in its output, which random-weight models produce. Special tokens decode
// to nothing and stay allowed.
func banNonASCII(tok *tokenizer.Tokenizer) map[string]float64 {
	bias := map[string]float64{}
	for id := range int32(tok.VocabSize()) {
		s := tok.Decode([]int32{id})
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				bias[fmt.Sprint(id)] = -100
				break
			}
		}
	}
	return bias
}

// ggufTokenizer reads a GGUF file's tokenizer without its tensors' data.
func ggufTokenizer(path string) (*tokenizer.Tokenizer, error) {
	g, err := loader.OpenGGUF(path)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	return tokenizer.FromGGUF(g)
}
