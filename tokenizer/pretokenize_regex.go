package tokenizer

import (
	"fmt"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// regexSplitter is the general Split pre-tokenizer for patterns without a
// hand-written splitter. It uses a backtracking engine (lookahead is
// common in these patterns).
type regexSplitter struct {
	re     *regexp2.Regexp
	remove bool // behaviour "Removed": drop the matches, keep the gaps
	invert bool
}

func newRegexSplitter(pattern string, behavior string, invert bool) (*regexSplitter, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, err
	}
	switch behavior {
	case "Isolated":
		return &regexSplitter{re: re, invert: invert}, nil
	case "Removed":
		return &regexSplitter{re: re, remove: true, invert: invert}, nil
	}
	return nil, fmt.Errorf("%w: split behavior %q", ErrUnsupported, behavior)
}

func (p *regexSplitter) split(s string, emit func(string)) {
	if s == "" {
		return
	}
	// regexp2 works on runes; map rune indexes back to byte offsets. An
	// invalid byte is one rune (U+FFFD), as in []rune(s).
	offs := make([]int, 0, len(s)+1)
	runes := make([]rune, 0, len(s))
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		offs = append(offs, i)
		runes = append(runes, r)
		i += w
	}
	offs = append(offs, len(s))
	type span struct{ a, b int }
	var matches []span
	// regexp2 returns an error only on a match timeout, and none is set.
	m, _ := p.re.FindRunesMatch(runes)
	for m != nil {
		a := m.Index
		b := a + m.Length
		if b > a {
			matches = append(matches, span{offs[a], offs[b]})
		}
		m, _ = p.re.FindNextMatch(m)
	}
	emitGap := !(p.remove && p.invert)
	emitMatch := !(p.remove && !p.invert)
	prev := 0
	for _, sp := range matches {
		if sp.a > prev && emitGap {
			emit(s[prev:sp.a])
		}
		if emitMatch {
			emit(s[sp.a:sp.b])
		}
		prev = sp.b
	}
	if prev < len(s) && emitGap {
		emit(s[prev:])
	}
}
