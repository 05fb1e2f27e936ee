package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Character classes used by the pre-tokenizer patterns: \p{L}, \p{N}, \s
// (Unicode White_Space, as in Oniguruma and Rust), and everything else.
const (
	clsOther uint8 = iota
	clsLetter
	clsNumber
	clsSpace
)

var asciiClass [utf8.RuneSelf]uint8

func init() {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		asciiClass[r] = classOfSlow(r)
	}
}

func classOfSlow(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsSpace(r):
		return clsSpace
	}
	return clsOther
}

func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	return classOfSlow(r)
}

// runeAt decodes the rune at s[i]. Invalid UTF-8 yields (RuneError, 1),
// which classifies as clsOther.
func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// classOfMarks is classOf with combining marks (\p{M}) as letters.
func classOfMarks(r rune) uint8 {
	if r >= utf8.RuneSelf && unicode.Is(unicode.M, r) {
		return clsLetter
	}
	return classOf(r)
}

// scanClassOf is scanClass under the classes of classOf.
func scanClassOf(s string, i int, c uint8, classOf func(rune) uint8) int {
	for i < len(s) {
		r, w := runeAt(s, i)
		if classOf(r) != c {
			break
		}
		i += w
	}
	return i
}

// scanClass returns the end of the run of class c that starts at i.
func scanClass(s string, i int, c uint8) int {
	for i < len(s) {
		r, w := runeAt(s, i)
		if classOf(r) != c {
			break
		}
		i += w
	}
	return i
}
