package sampler

import (
	"fmt"
	"strings"
	"unicode"
)

// TokenizeBadWords turns bad_words into the token sequences the sampler
// bans, as vLLM does: each word is encoded without its leading whitespace,
// and again with one leading space (to catch it mid-sentence) when that
// gives a different first token and the same number of tokens. encode must
// not add special tokens (BOS). Set the result as Params.BadWordIDs.
func TokenizeBadWords(words []string, encode func(string) ([]int32, error)) ([][]int32, error) {
	var out [][]int32
	for _, w := range words {
		if w == "" {
			return nil, &ParamError{Param: "bad_words", Value: `""`, Reason: "must not contain an empty string"}
		}
		w = strings.TrimLeftFunc(w, unicode.IsSpace)
		plain, err := encode(w)
		if err != nil {
			return nil, fmt.Errorf("sampler: tokenizing bad word %q: %w", w, err)
		}
		if len(plain) == 0 {
			return nil, &ParamError{Param: "bad_words", Value: w, Reason: "must tokenize to at least one token"}
		}
		out = append(out, plain)
		spaced, err := encode(" " + w)
		if err != nil {
			return nil, fmt.Errorf("sampler: tokenizing bad word %q: %w", " "+w, err)
		}
		if len(spaced) == len(plain) && spaced[0] != plain[0] {
			out = append(out, spaced)
		}
	}
	return out, nil
}
