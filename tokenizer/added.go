package tokenizer

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// addedToken is a token matched in the raw text before any other step, like
// Hugging Face's added tokens and llama.cpp's control/user-defined tokens.
type addedToken struct {
	text       string
	id         int32
	special    bool // skipped when special tokens are encoded as text
	lstrip     bool // swallows whitespace on its left
	rstrip     bool // swallows whitespace on its right
	singleWord bool // matches only at word boundaries
	normalized bool // matched against normalized text
}

// addedMatcher finds added tokens with leftmost-longest semantics (as the
// Aho-Corasick automaton in Hugging Face tokenizers does) using a byte trie.
type addedMatcher struct {
	tokens []addedToken
	nodes  []trieNode
	first  [256]bool
	// has counts the tokens matched on raw (0) and normalized (1) text.
	has [2]int
}

type trieNode struct {
	edges []trieEdge // sorted by byte
	tok   int32      // index into tokens, -1 if no token ends here
}

type trieEdge struct {
	b    byte
	next int32
}

func newAddedMatcher(toks []addedToken) *addedMatcher {
	m := &addedMatcher{nodes: []trieNode{{tok: -1}}}
	for _, t := range toks {
		if t.text == "" {
			continue
		}
		m.tokens = append(m.tokens, t)
		idx := int32(len(m.tokens) - 1)
		n := int32(0)
		for i := 0; i < len(t.text); i++ {
			n = m.child(n, t.text[i])
		}
		// On duplicate texts the first declaration wins.
		if m.nodes[n].tok < 0 {
			m.nodes[n].tok = idx
		}
		m.first[t.text[0]] = true
		if t.normalized {
			m.has[1]++
		} else {
			m.has[0]++
		}
	}
	return m
}

func (m *addedMatcher) child(n int32, b byte) int32 {
	es := m.nodes[n].edges
	i := sort.Search(len(es), func(i int) bool { return es[i].b >= b })
	if i < len(es) && es[i].b == b {
		return es[i].next
	}
	m.nodes = append(m.nodes, trieNode{tok: -1})
	c := int32(len(m.nodes) - 1)
	es = append(es, trieEdge{})
	copy(es[i+1:], es[i:])
	es[i] = trieEdge{b, c}
	m.nodes[n].edges = es
	return c
}

func (m *addedMatcher) step(n int32, b byte) int32 {
	es := m.nodes[n].edges
	lo, hi := 0, len(es)
	for lo < hi {
		mid := (lo + hi) / 2
		if es[mid].b < b {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(es) && es[lo].b == b {
		return es[lo].next
	}
	return -1
}

// longestAt returns the index of the longest token that starts at s[i] and
// its end, or -1.
func (m *addedMatcher) longestAt(s string, i int, normalized bool) (int32, int) {
	best, end := int32(-1), 0
	n := int32(0)
	for j := i; j < len(s); j++ {
		if n = m.step(n, s[j]); n < 0 {
			break
		}
		if t := m.nodes[n].tok; t >= 0 && m.tokens[t].normalized == normalized {
			best, end = t, j+1
		}
	}
	return best, end
}

// split cuts s into text segments and added tokens, calling fn with id -1
// for text. Only tokens whose normalized flag equals normalized take part.
// With specialAsText, special tokens are found but left in the text, as
// Hugging Face does with split_special_tokens.
func (m *addedMatcher) split(s string, normalized, specialAsText bool, fn func(seg string, id int32)) {
	if m == nil || (normalized && m.has[1] == 0) || (!normalized && m.has[0] == 0) {
		if s != "" {
			fn(s, -1)
		}
		return
	}
	textStart := 0
	for i := 0; i < len(s); {
		if !m.first[s[i]] {
			i++
			continue
		}
		t, end := m.longestAt(s, i, normalized)
		if t < 0 {
			i++
			continue
		}
		tok := &m.tokens[t]
		start, stop := i, end
		skip := specialAsText && tok.special
		if !skip && tok.singleWord {
			skip = (start > 0 && endsWithWordChar(s[:start])) || (stop < len(s) && startsWithWordChar(s[stop:]))
		}
		if skip {
			i = end
			continue
		}
		if tok.lstrip {
			start = textStart + lastNonSpace(s[textStart:start])
		}
		if tok.rstrip {
			stop += leadingSpace(s[stop:])
		}
		if start > textStart {
			fn(s[textStart:start], -1)
		}
		fn(s[start:stop], tok.id)
		textStart, i = stop, stop
	}
	if textStart < len(s) {
		fn(s[textStart:], -1)
	}
}

func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func endsWithWordChar(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isWordChar(r)
}

// lastNonSpace returns the offset just after the last non-space rune of s.
func lastNonSpace(s string) int {
	for i := len(s); i > 0; {
		r, w := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsSpace(r) {
			return i
		}
		i -= w
	}
	return 0
}

// leadingSpace returns the length of the whitespace prefix of s.
func leadingSpace(s string) int {
	for i, r := range s {
		if !unicode.IsSpace(r) {
			return i
		}
	}
	return len(s)
}
