package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// patternO200k is o200k_base's split pattern (GPT-4o, Phi-4-mini; GGUF
// pre-tokenizer "gpt-4o"): letters split at case changes, a contraction
// attached to the word before it, digits in threes, a slash run ending a
// punctuation run.
const patternO200k = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// The letter classes of patternO200k: "upper" is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
// "lower" [\p{Ll}\p{Lm}\p{Lo}\p{M}]; modifier and other letters and marks
// are both.
const (
	o200kUpper uint8 = 1 << iota
	o200kLower
)

// o200kCase is r's letter classes under patternO200k (0: neither).
func o200kCase(r rune) uint8 {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z':
			return o200kLower
		case 'A' <= r && r <= 'Z':
			return o200kUpper
		}
		return 0
	}
	switch {
	case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
		return o200kUpper
	case unicode.Is(unicode.Ll, r):
		return o200kLower
	case unicode.Is(unicode.Lm, r), unicode.Is(unicode.Lo, r), unicode.Is(unicode.M, r):
		return o200kUpper | o200kLower
	}
	return 0
}

// nextO200k returns the end of the piece that starts at s[i] under
// patternO200k, following the regex engine's leftmost-first alternation
// and backtracking: each of the two word alternatives is tried with the
// optional first character [^\r\n\p{L}\p{N}] and then without it.
func nextO200k(s string, i int) int {
	r, w := runeAt(s, i)
	c := classOf(r)
	prefix := r != '\r' && r != '\n' && c != clsLetter && c != clsNumber
	starts := []int{i}
	if prefix && i+w < len(s) {
		starts = []int{i + w, i}
	}
	// [^\r\n\p{L}\p{N}]?[upper]*[lower]+(contraction)?: the upper run as
	// long as it goes, then the lower run after it; or, when none follows,
	// the upper run given back to its last lower-class character.
	for _, k := range starts {
		j, lastLower := k, -1
		for j < len(s) {
			r2, w2 := runeAt(s, j)
			cs := o200kCase(r2)
			if cs&o200kUpper == 0 {
				break
			}
			if cs&o200kLower != 0 {
				lastLower = j + w2
			}
			j += w2
		}
		end := -1
		if e := scanO200k(s, j, o200kLower); e > j {
			end = e
		} else if lastLower > 0 {
			end = lastLower
		}
		if end > 0 {
			return o200kContraction(s, end)
		}
	}
	// [^\r\n\p{L}\p{N}]?[upper]+[lower]*(contraction)?
	for _, k := range starts {
		if j := scanO200k(s, k, o200kUpper); j > k {
			return o200kContraction(s, scanO200k(s, j, o200kLower))
		}
	}
	// \p{N}{1,3}
	if c == clsNumber {
		j := i + w
		for n := 1; n < 3 && j < len(s); n++ {
			r2, w2 := runeAt(s, j)
			if classOf(r2) != clsNumber {
				break
			}
			j += w2
		}
		return j
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n/]*
	j := i
	if r == ' ' {
		j++
	}
	if j < len(s) {
		if r2, w2 := runeAt(s, j); classOf(r2) == clsOther {
			j = scanClass(s, j+w2, clsOther)
			for j < len(s) && (s[j] == '\r' || s[j] == '\n' || s[j] == '/') {
				j++
			}
			return j
		}
	}
	// \s*[\r\n]+|\s+(?!\S)|\s+
	return nextSpace(s, i, true)
}

// scanO200k returns the end of the run, from i, of runes with letter
// class cls.
func scanO200k(s string, i int, cls uint8) int {
	for i < len(s) {
		r, w := runeAt(s, i)
		if o200kCase(r)&cls == 0 {
			break
		}
		i += w
	}
	return i
}

// o200kContraction is end, past the optional (?i:'s|'t|'re|'ve|'m|'ll|'d)
// that follows it.
func o200kContraction(s string, end int) int {
	if end < len(s) && s[end] == '\'' {
		if n := contraction(s[end+1:], true); n > 0 {
			return end + 1 + n
		}
	}
	return end
}
