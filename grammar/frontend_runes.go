package grammar

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// cpRange is the code points lo..hi inclusive, for the front ends (regular
// expressions, JSON Schema) that build character classes.
type cpRange struct{ lo, hi rune }

// cpSet is a set of Unicode scalar values: sorted, merged ranges without
// the surrogates (which UTF-8 cannot encode).
type cpSet []cpRange

// newCPSet normalizes ranges into a set.
func newCPSet(rs ...cpRange) cpSet {
	var cut []cpRange
	for _, r := range rs {
		if r.lo > r.hi {
			continue
		}
		if r.lo <= 0xDFFF && r.hi >= 0xD800 {
			if r.lo < 0xD800 {
				cut = append(cut, cpRange{r.lo, 0xD7FF})
			}
			if r.hi > 0xDFFF {
				cut = append(cut, cpRange{0xE000, r.hi})
			}
			continue
		}
		cut = append(cut, r)
	}
	sort.Slice(cut, func(i, j int) bool { return cut[i].lo < cut[j].lo })
	var out cpSet
	for _, r := range cut {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// cpRune is the set of one code point.
func cpRune(r rune) cpSet { return newCPSet(cpRange{r, r}) }

// cpAll is every scalar value.
var cpAll = newCPSet(cpRange{0, utf8.MaxRune})

func (s cpSet) union(t cpSet) cpSet {
	return newCPSet(append(append([]cpRange(nil), s...), t...)...)
}

// complement is every scalar value not in s.
func (s cpSet) complement() cpSet {
	var out []cpRange
	next := rune(0)
	for _, r := range s {
		if r.lo > next {
			out = append(out, cpRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, cpRange{next, utf8.MaxRune})
	}
	return newCPSet(out...)
}

func (s cpSet) minus(t cpSet) cpSet { return s.intersect(t.complement()) }

func (s cpSet) intersect(t cpSet) cpSet {
	var out []cpRange
	i, j := 0, 0
	for i < len(s) && j < len(t) {
		lo, hi := max(s[i].lo, t[j].lo), min(s[i].hi, t[j].hi)
		if lo <= hi {
			out = append(out, cpRange{lo, hi})
		}
		if s[i].hi < t[j].hi {
			i++
		} else {
			j++
		}
	}
	return newCPSet(out...)
}

func (s cpSet) has(r rune) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i].hi >= r })
	return i < len(s) && s[i].lo <= r
}

func (s cpSet) empty() bool { return len(s) == 0 }

// single returns the set's only member.
func (s cpSet) single() (rune, bool) {
	if len(s) == 1 && s[0].lo == s[0].hi {
		return s[0].lo, true
	}
	return 0, false
}

// size counts the members.
func (s cpSet) size() int {
	n := 0
	for _, r := range s {
		n += int(r.hi-r.lo) + 1
	}
	return n
}

// gbnfClass writes s as a GBNF character class, negated when that is
// shorter, or `.` when s is every character. s must not be empty.
func gbnfClass(s cpSet) string {
	if s.size() == cpAll.size() {
		return "."
	}
	neg := false
	set := s
	if c := s.complement(); len(c) < len(s) && !c.empty() {
		neg, set = true, c
	}
	var b strings.Builder
	b.WriteByte('[')
	if neg {
		b.WriteByte('^')
	}
	for _, r := range set {
		b.WriteString(gbnfClassChar(r.lo))
		if r.hi > r.lo {
			if r.hi > r.lo+1 {
				b.WriteByte('-')
			}
			b.WriteString(gbnfClassChar(r.hi))
		}
	}
	b.WriteByte(']')
	return b.String()
}

// gbnfCharExpr is one character of s as a GBNF expression.
func gbnfCharExpr(s cpSet) string {
	if r, ok := s.single(); ok {
		return gbnfQuote(string(r))
	}
	return gbnfClass(s)
}

// gbnfClassChar writes one class member: ASCII letters and digits as
// themselves, everything else as an escape, so that no member is read as
// class syntax.
func gbnfClassChar(r rune) string {
	switch {
	case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
		return string(r)
	case r < 0x80:
		return fmt.Sprintf("\\x%02X", r)
	case r <= 0xFFFF:
		return fmt.Sprintf("\\u%04X", r)
	}
	return fmt.Sprintf("\\U%08X", r)
}

// Quote writes s as a GBNF string literal, for grammars built as text
// (the tool-call grammars embed names and markers with it).
func Quote(s string) string { return gbnfQuote(s) }

func gbnfQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7F:
			fmt.Fprintf(&b, "\\x%02X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
