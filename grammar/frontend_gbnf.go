package grammar

import (
	"errors"
	"fmt"
	"strings"
)

// frontLimit bounds the GBNF text a front end (JSON Schema, regex) writes.
const frontLimit = 1 << 20

// errFrontTooBig reports a grammar over frontLimit; the front ends turn it
// into their own error types.
var errFrontTooBig = errors.New("the grammar would exceed 1 MiB")

// gbnfWriter collects named GBNF rules for a front end: every name gets the
// writer's prefix, equal bodies share one rule, and the text is bounded by
// frontLimit.
type gbnfWriter struct {
	prefix string
	taken  map[string]bool
	suffix map[string]int // next number to try after each base name
	byBody map[string]string
	bodies map[string]string
	order  []string
	size   int
	err    error
}

func newGBNFWriter(prefix string) *gbnfWriter {
	return &gbnfWriter{prefix: prefix, taken: map[string]bool{}, suffix: map[string]int{}, byBody: map[string]string{}, bodies: map[string]string{}}
}

// validRulePrefix reports whether prefix can start a GBNF rule name.
func validRulePrefix(prefix string) bool {
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// sanitizeRuleName makes hint a rule name ([a-zA-Z0-9-]+).
func sanitizeRuleName(hint string) string {
	var b strings.Builder
	dash := false
	for i := 0; i < len(hint) && b.Len() < 40; i++ {
		c := hint[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if s == "" {
		s = "r"
	}
	return s
}

// fresh reserves a new rule name from hint.
func (w *gbnfWriter) fresh(hint string) string {
	base := w.prefix + sanitizeRuleName(hint)
	name := base
	for w.taken[name] {
		w.suffix[base]++
		name = fmt.Sprintf("%s-%d", base, w.suffix[base]+1)
	}
	w.taken[name] = true
	return name
}

// define gives a reserved name its body.
func (w *gbnfWriter) define(name, body string) {
	if body == "" {
		body = `""`
	}
	if _, ok := w.bodies[name]; !ok {
		w.order = append(w.order, name)
	}
	w.bodies[name] = body
	w.size += len(name) + len(body) + 6
	if w.size > frontLimit && w.err == nil {
		w.err = errFrontTooBig
	}
}

// rule names body, reusing the rule of an equal body.
func (w *gbnfWriter) rule(hint, body string) string {
	if name, ok := w.byBody[body]; ok {
		return name
	}
	name := w.fresh(hint)
	w.byBody[body] = name
	w.define(name, body)
	return name
}

// text is the rules, one per line, in the order they were defined.
func (w *gbnfWriter) text() string {
	var b strings.Builder
	for _, n := range w.order {
		b.WriteString(n)
		b.WriteString(" ::= ")
		b.WriteString(w.bodies[n])
		b.WriteByte('\n')
	}
	return b.String()
}

// gAlt is the alternatives as one expression.
func gAlt(alts ...string) string {
	if len(alts) == 1 {
		return alts[0]
	}
	out := make([]string, len(alts))
	for i, a := range alts {
		out[i] = a
		if a == "" {
			out[i] = `""`
		}
	}
	return "(" + strings.Join(out, " | ") + ")"
}

// gSeq is the parts in sequence (empty parts dropped).
func gSeq(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, " ")
}

// gAtom wraps x in parentheses unless it is already one item (a name, a
// literal, a class, `.` or a group) that a postfix operator can follow.
func gAtom(x string) string {
	if x == "" {
		return `""`
	}
	if gItemEnd(x, 0) == len(x) {
		return x
	}
	return "(" + x + ")"
}

// gItemEnd returns where the item starting at i ends (or -1 when x does not
// start with an item there).
func gItemEnd(x string, i int) int {
	switch c := x[i]; {
	case c == '"' || c == '[':
		closer := byte('"')
		if c == '[' {
			closer = ']'
		}
		for j := i + 1; j < len(x); j++ {
			switch x[j] {
			case '\\':
				j++
			case closer:
				return j + 1
			}
		}
		return -1
	case c == '(':
		depth := 0
		for j := i; j < len(x); j++ {
			switch x[j] {
			case '"', '[':
				e := gItemEnd(x, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	case c == '.':
		return i + 1
	default:
		j := i
		for j < len(x) && (x[j] >= 'a' && x[j] <= 'z' || x[j] >= 'A' && x[j] <= 'Z' || x[j] >= '0' && x[j] <= '9' || x[j] == '-' || x[j] == '_') {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// repeat is x{lo,hi} (hi < 0: unbounded), split into nested repetitions
// when a count is over the GBNF parser's MaxRepeat.
func (w *gbnfWriter) repeat(x string, lo, hi int) string {
	if hi >= 0 && hi < lo {
		panic("grammar: repeat with hi < lo")
	}
	if hi == 0 {
		return ""
	}
	a := gAtom(x)
	switch {
	case lo == 1 && hi == 1:
		return x
	case lo == 0 && hi == 1:
		return a + "?"
	case lo == 0 && hi < 0:
		return a + "*"
	case lo == 1 && hi < 0:
		return a + "+"
	}
	const R = MaxRepeat
	if lo <= R && hi <= R {
		switch {
		case hi < 0:
			return fmt.Sprintf("%s{%d,}", a, lo)
		case lo == hi:
			return fmt.Sprintf("%s{%d}", a, lo)
		}
		return fmt.Sprintf("%s{%d,%d}", a, lo, hi)
	}
	if lo > R*R || hi > R*R {
		if w.err == nil {
			w.err = fmt.Errorf("a repetition count over %d", R*R)
		}
		return ""
	}
	chunk := w.rule("rep", fmt.Sprintf("%s{%d}", a, R))
	var parts []string
	if lo > R {
		parts = append(parts, w.repeat(chunk, lo/R, lo/R), w.repeat(a, lo%R, lo%R))
	} else {
		parts = append(parts, w.repeat(a, lo, lo))
	}
	switch rest := hi - lo; {
	case hi < 0:
		parts = append(parts, a+"*")
	case rest <= R:
		parts = append(parts, w.repeat(a, 0, rest))
	default:
		q, r := rest/R, rest%R
		parts = append(parts, gAlt(
			gSeq(w.repeat(chunk, 0, q-1), w.repeat(a, 0, R-1)),
			gSeq(w.repeat(chunk, q, q), w.repeat(a, 0, r))))
	}
	return gSeq(parts...)
}

// gExpr is a parsed rule body, for the productivity check: a reference
// (name), a terminal (always productive), alternatives or a sequence
// (subs), or a repetition of subs[0] at least min times.
type gExpr struct {
	kind byte // 'r' reference, 't' terminal, '|' alternatives, ' ' sequence, '*' repetition
	name string
	subs []*gExpr
	min  int
}

// parseBody parses a body this writer wrote (names, literals, classes, `.`,
// groups, postfix operators).
func parseBody(s string) *gExpr {
	pos := 0
	var alt func() *gExpr
	alt = func() *gExpr {
		out := &gExpr{kind: '|'}
		seq := &gExpr{kind: ' '}
		for pos < len(s) {
			c := s[pos]
			switch {
			case c == ' ':
				pos++
				continue
			case c == '|':
				pos++
				out.subs = append(out.subs, seq)
				seq = &gExpr{kind: ' '}
				continue
			case c == ')':
				out.subs = append(out.subs, seq)
				return out
			}
			var item *gExpr
			if c == '(' {
				pos++
				item = alt()
				pos++ // ')'
			} else {
				end := gItemEnd(s, pos)
				if end < 0 {
					end = len(s)
				}
				if c == '"' || c == '[' || c == '.' {
					item = &gExpr{kind: 't'}
				} else {
					item = &gExpr{kind: 'r', name: s[pos:end]}
				}
				pos = end
			}
			for pos < len(s) && strings.IndexByte("*+?{", s[pos]) >= 0 {
				min := 0
				switch s[pos] {
				case '+':
					min = 1
					pos++
				case '*', '?':
					pos++
				case '{':
					j := pos + 1
					for j < len(s) && s[j] >= '0' && s[j] <= '9' {
						min = min*10 + int(s[j]-'0')
						j++
					}
					for j < len(s) && s[j] != '}' {
						j++
					}
					pos = j + 1
				}
				item = &gExpr{kind: '*', subs: []*gExpr{item}, min: min}
			}
			seq.subs = append(seq.subs, item)
		}
		out.subs = append(out.subs, seq)
		return out
	}
	return alt()
}

func (e *gExpr) productive(ok map[string]bool) bool {
	switch e.kind {
	case 't':
		return true
	case 'r':
		return ok[e.name]
	case '*':
		return e.min == 0 || e.subs[0].productive(ok)
	case '|':
		for _, s := range e.subs {
			if s.productive(ok) {
				return true
			}
		}
		return false
	}
	for _, s := range e.subs {
		if !s.productive(ok) {
			return false
		}
	}
	return true
}

// unproductive lists the rules that derive no finite text (a recursion
// with no way out), in definition order.
func (w *gbnfWriter) unproductive() []string {
	exprs := map[string]*gExpr{}
	for _, n := range w.order {
		exprs[n] = parseBody(w.bodies[n])
	}
	ok := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, n := range w.order {
			if !ok[n] && exprs[n].productive(ok) {
				ok[n], changed = true, true
			}
		}
	}
	var bad []string
	for _, n := range w.order {
		if !ok[n] {
			bad = append(bad, n)
		}
	}
	return bad
}
