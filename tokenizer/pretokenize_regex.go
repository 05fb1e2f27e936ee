package tokenizer

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// ErrRegexBudget marks a Split pattern that cannot be run safely: one whose
// backtracking can grow exponentially (rejected at load), or one that ran
// past its time budget on some input.
var ErrRegexBudget = errors.New("split pattern exceeds its matching budget")

// Time budget of one regexSplitter.split call: a pattern of the tokenizer
// file, not the text, is at fault when it is exceeded. regexMatchTimeout
// bounds one match inside it (regexp2 checks its clock while backtracking).
const (
	regexSplitBudget  = 2 * time.Second
	regexMatchTimeout = time.Second
)

// regexSplitter is the general Split pre-tokenizer for patterns without a
// hand-written splitter. It uses a backtracking engine (lookahead is
// common in these patterns), so patterns with nested unbounded quantifiers
// are refused and every split runs under a time budget.
type regexSplitter struct {
	re *regexp2.Regexp
	// behavior is Hugging Face's SplitDelimiterBehavior: Isolated,
	// Removed, MergedWithPrevious, MergedWithNext or Contiguous.
	behavior    string
	invert      bool
	file, field string // where the pattern came from, for errors
}

func newRegexSplitter(pattern string, behavior string, invert bool) (*regexSplitter, error) {
	if at, ok := nestedQuantifier(pattern); ok {
		return nil, fmt.Errorf("%w: pattern %q nests an unbounded quantifier inside a repeated group at character %d (exponential backtracking)", ErrRegexBudget, pattern, at)
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = regexMatchTimeout
	switch behavior {
	case "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous":
		return &regexSplitter{re: re, behavior: behavior, invert: invert}, nil
	}
	return nil, fmt.Errorf("%w: split behavior %q", ErrUnsupported, behavior)
}

func (p *regexSplitter) split(s string, emit func(string)) error {
	if s == "" {
		return nil
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
	start := time.Now()
	m, err := p.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		a := m.Index
		b := a + m.Length
		if b > a {
			matches = append(matches, span{offs[a], offs[b]})
		}
		if time.Since(start) > regexSplitBudget {
			err = errors.New("time budget spent")
			break
		}
		m, err = p.re.FindNextMatch(m)
	}
	if err != nil {
		// regexp2 fails only on its match timeout.
		return formatErr(p.file, p.field, fmt.Errorf("%w: pattern %q on a %d-byte piece of text: %v (budget %v)", ErrRegexBudget, p.re.String(), len(s), err, regexSplitBudget))
	}
	// The text as Hugging Face's split sees it: the matches and the gaps
	// between them, in order, each marked as a delimiter or not (invert
	// makes the gaps the delimiters).
	var segs []segment
	prev := 0
	for _, sp := range matches {
		if sp.a > prev {
			segs = append(segs, segment{prev, sp.a, p.invert})
		}
		segs = append(segs, segment{sp.a, sp.b, !p.invert})
		prev = sp.b
	}
	if prev < len(s) {
		segs = append(segs, segment{prev, len(s), p.invert})
	}
	for _, sg := range splitBehavior(segs, p.behavior) {
		emit(s[sg.a:sg.b])
	}
	return nil
}

// segment is a span [a, b) of a split's input; delim marks a delimiter.
type segment struct {
	a, b  int
	delim bool
}

// splitBehavior applies Hugging Face's SplitDelimiterBehavior to segs (the
// input's spans in order) and returns the pieces: Isolated keeps every
// span, Removed drops the delimiters, MergedWithPrevious appends a
// delimiter to the piece before it (unless that piece is a delimiter
// itself), MergedWithNext prepends it to the piece after it (the same
// way, from the end), Contiguous joins runs of delimiters.
func splitBehavior(segs []segment, behavior string) []segment {
	var out []segment
	switch behavior {
	case "Removed":
		for _, sg := range segs {
			if !sg.delim {
				out = append(out, sg)
			}
		}
		return out
	case "MergedWithPrevious":
		prevDelim := false
		for _, sg := range segs {
			if sg.delim && !prevDelim && len(out) > 0 {
				out[len(out)-1].b = sg.b
			} else {
				out = append(out, segment{sg.a, sg.b, false})
			}
			prevDelim = sg.delim
		}
		return out
	case "MergedWithNext":
		prevDelim := false
		for i := len(segs) - 1; i >= 0; i-- {
			sg := segs[i]
			if sg.delim && !prevDelim && len(out) > 0 {
				out[len(out)-1].a = sg.a
			} else {
				out = append(out, segment{sg.a, sg.b, false})
			}
			prevDelim = sg.delim
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	case "Contiguous":
		for _, sg := range segs {
			if n := len(out); n > 0 && sg.delim && out[n-1].delim {
				out[n-1].b = sg.b
			} else {
				out = append(out, sg)
			}
		}
		return out
	}
	return segs // Isolated
}

// nestedQuantifier reports whether pattern repeats a group (with *, +, or
// {n,m} allowing more than one repetition) that itself contains an
// unbounded quantifier, like (a+)+ or (?:x*y)*: the shape whose
// backtracking grows exponentially. It returns the offset (in bytes) of the
// outer quantifier. Atomic groups (?>...) are exempt. The scan is
// lexical: escapes and character classes are skipped.
func nestedQuantifier(pattern string) (int, bool) {
	type group struct {
		unbounded bool // holds an unbounded quantifier
		atomic    bool
	}
	stack := []group{{}}
	// closed is the group that ended just before i, if the next token
	// quantifies it.
	var closed *group
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		prevClosed := closed
		closed = nil
		switch c {
		case '\\':
			i++ // the escaped character (a multi-byte one is harmless here)
		case '[':
			i = classEnd(pattern, i)
		case '(':
			g := group{}
			if i+2 < len(pattern) && pattern[i+1] == '?' && pattern[i+2] == '>' {
				g.atomic = true
			}
			stack = append(stack, g)
		case ')':
			if len(stack) == 1 {
				continue // unbalanced: the regex compiler reports it
			}
			g := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if g.unbounded && !g.atomic {
				stack[len(stack)-1].unbounded = true
			}
			closed = &g
		case '*', '+', '{':
			unbounded, many, end := quantifier(pattern, i)
			if end < 0 {
				continue // a literal '{'
			}
			if prevClosed != nil && many && prevClosed.unbounded && !prevClosed.atomic {
				return i, true
			}
			if unbounded {
				stack[len(stack)-1].unbounded = true
			}
			i = end
			if i+1 < len(pattern) && (pattern[i+1] == '?' || pattern[i+1] == '+') {
				i++ // lazy or possessive suffix
			}
		}
	}
	return 0, false
}

// quantifier reads the quantifier at pattern[i] ('*', '+' or '{'): whether
// it is unbounded, whether it allows more than one repetition, and the
// offset of its last byte (-1 if '{' does not start a quantifier).
func quantifier(pattern string, i int) (unbounded, many bool, end int) {
	switch pattern[i] {
	case '*', '+':
		return true, true, i
	}
	lo, hi, comma, j := -1, -1, false, i+1
	num := func() int {
		n := -1
		for j < len(pattern) && pattern[j] >= '0' && pattern[j] <= '9' {
			n = max(n, 0)*10 + int(pattern[j]-'0')
			if n > 1<<20 {
				n = 1 << 20
			}
			j++
		}
		return n
	}
	lo = num()
	if j < len(pattern) && pattern[j] == ',' {
		comma = true
		j++
		hi = num()
	}
	if lo < 0 || j >= len(pattern) || pattern[j] != '}' {
		return false, false, -1
	}
	if !comma {
		hi = lo
	}
	if comma && hi < 0 {
		return true, true, j
	}
	return false, hi > 1, j
}

// classEnd returns the offset of the ']' closing the character class that
// opens at pattern[i], or the last offset if it is not closed.
func classEnd(pattern string, i int) int {
	j := i + 1
	if j < len(pattern) && pattern[j] == '^' {
		j++
	}
	if j < len(pattern) && pattern[j] == ']' {
		j++ // a leading ']' is literal
	}
	for ; j < len(pattern); j++ {
		switch pattern[j] {
		case '\\':
			j++
		case '[':
			// a nested class (subtraction, POSIX [:alpha:]) in some dialects
			if j+1 < len(pattern) && pattern[j+1] == ':' {
				continue
			}
		case ']':
			return j
		}
	}
	return len(pattern) - 1
}
