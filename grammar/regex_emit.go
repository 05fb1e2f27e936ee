package grammar

import (
	"fmt"
	"strings"
)

// rxEmitter writes parsed regular expressions as GBNF expressions, either
// over raw text or over the content of a JSON string (where `"`, `\` and
// the control characters are written as JSON escapes).
type rxEmitter struct {
	w    *gbnfWriter
	json bool
}

func (e *rxEmitter) expr(n *rxNode) string {
	switch n.kind {
	case rxEmpty:
		return `""`
	case rxChar:
		return e.char(n.set)
	case rxConcat:
		var parts []string
		var lit strings.Builder
		flush := func() {
			if lit.Len() > 0 {
				parts = append(parts, gbnfQuote(lit.String()))
				lit.Reset()
			}
		}
		for _, s := range n.subs {
			if s.kind == rxChar {
				if r, ok := s.set.single(); ok {
					lit.WriteString(e.literal(r))
					continue
				}
			}
			flush()
			parts = append(parts, e.expr(s))
		}
		flush()
		return gSeq(parts...)
	case rxAlt:
		alts := make([]string, len(n.subs))
		for i, s := range n.subs {
			alts[i] = e.expr(s)
		}
		return gAlt(alts...)
	case rxRepeat:
		if n.max == 0 {
			return `""`
		}
		return e.w.repeat(e.expr(n.subs[0]), n.min, n.max)
	}
	panic("grammar: unknown regex node")
}

// literal is r as text: itself, or its JSON escape inside a JSON string.
func (e *rxEmitter) literal(r rune) string {
	if !e.json {
		return string(r)
	}
	return jsonEscapeRune(r)
}

// jsonEscapeRune is r as JSON string content, in its canonical form.
func jsonEscapeRune(r rune) string {
	switch r {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x20 {
		return fmt.Sprintf(`\u%04x`, r)
	}
	return string(r)
}

// jsonSpecial is the characters a JSON string must escape.
var jsonSpecial = newCPSet(cpRange{0, 0x1F}, cpRange{'"', '"'}, cpRange{'\\', '\\'})

// char is one character of set.
func (e *rxEmitter) char(set cpSet) string {
	if !e.json {
		return gbnfCharExpr(set)
	}
	if r, ok := set.single(); ok {
		return gbnfQuote(jsonEscapeRune(r))
	}
	var alts []string
	if raw := set.minus(jsonSpecial); !raw.empty() {
		alts = append(alts, gbnfCharExpr(raw))
	}
	var short []string
	var ctl [2][]rune // \u000X and \u001X escapes, by the low nibble
	for _, r := range set.intersect(jsonSpecial).members() {
		if esc := jsonEscapeRune(r); len(esc) == 2 {
			short = append(short, esc[1:])
		} else {
			ctl[r>>4] = append(ctl[r>>4], r&15)
		}
	}
	if len(short) > 0 {
		alts = append(alts, gSeq(`"\\"`, gbnfCharExpr(newCPSetRunes(short...))))
	}
	for hi, lows := range ctl {
		if len(lows) == 0 {
			continue
		}
		var digits []cpRange
		for _, v := range lows {
			d := rune('0' + v)
			if v >= 10 {
				d = 'a' + v - 10
				digits = append(digits, cpRange{d - 32, d - 32})
			}
			digits = append(digits, cpRange{d, d})
		}
		alts = append(alts, gSeq(gbnfQuote(fmt.Sprintf(`\u00%d`, hi)), gbnfCharExpr(newCPSet(digits...))))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return e.w.rule("rx-char", strings.Join(alts, " | "))
}

// members lists a small set's characters.
func (s cpSet) members() []rune {
	var out []rune
	for _, r := range s {
		for c := r.lo; c <= r.hi; c++ {
			out = append(out, c)
		}
	}
	return out
}

// newCPSetRunes is the set of the first rune of each string.
func newCPSetRunes(ss ...string) cpSet {
	var rs []cpRange
	for _, s := range ss {
		r := []rune(s)[0]
		rs = append(rs, cpRange{r, r})
	}
	return newCPSet(rs...)
}

// rxBounds is the least and greatest length (in characters) of n's
// matches; hi is -1 when unbounded.
func rxBounds(n *rxNode) (lo, hi int) {
	switch n.kind {
	case rxEmpty:
		return 0, 0
	case rxChar:
		return 1, 1
	case rxConcat:
		for _, s := range n.subs {
			a, b := rxBounds(s)
			lo += a
			if hi >= 0 {
				if b < 0 {
					hi = -1
				} else {
					hi += b
				}
			}
		}
		return lo, hi
	case rxAlt:
		lo = -1
		for _, s := range n.subs {
			a, b := rxBounds(s)
			if lo < 0 || a < lo {
				lo = a
			}
			if hi >= 0 && (b < 0 || b > hi) {
				hi = b
			}
		}
		return lo, hi
	case rxRepeat:
		a, b := rxBounds(n.subs[0])
		lo = a * n.min
		switch {
		case n.max == 0 || b == 0:
			hi = 0
		case n.max < 0 || b < 0:
			hi = -1
		default:
			hi = b * n.max
		}
		return lo, hi
	}
	return 0, 0
}

// rxRestrict is n limited to matches of lo..hi characters (hi -1:
// unbounded). never reports that no match has such a length; ok is false
// when the limit cannot be applied exactly (more than one part of n varies
// in length).
func rxRestrict(n *rxNode, lo, hi int) (out *rxNode, never, ok bool) {
	lo = max(lo, 0)
	a, b := rxBounds(n)
	if a >= lo && (hi < 0 || b >= 0 && b <= hi) {
		return n, false, true
	}
	if b >= 0 && b < lo || hi >= 0 && a > hi {
		return nil, true, true
	}
	switch n.kind {
	case rxAlt:
		var alts []*rxNode
		for _, s := range n.subs {
			r, nv, ok := rxRestrict(s, lo, hi)
			if !ok {
				return nil, false, false
			}
			if !nv {
				alts = append(alts, r)
			}
		}
		if len(alts) == 0 {
			return nil, true, true
		}
		return &rxNode{kind: rxAlt, subs: alts}, false, true
	case rxConcat:
		vary := -1
		fixed := 0
		for i, s := range n.subs {
			sa, sb := rxBounds(s)
			if sa != sb {
				if vary >= 0 {
					return nil, false, false
				}
				vary = i
				continue
			}
			fixed += sa
		}
		subHi := -1
		if hi >= 0 {
			subHi = hi - fixed
		}
		r, nv, ok := rxRestrict(n.subs[vary], lo-fixed, subHi)
		if !ok || nv {
			return nil, nv, ok
		}
		subs := append([]*rxNode(nil), n.subs...)
		subs[vary] = r
		return &rxNode{kind: rxConcat, subs: subs}, false, true
	case rxRepeat:
		k, kb := rxBounds(n.subs[0])
		if k != kb || k == 0 {
			return nil, false, false
		}
		cmin := max(n.min, (lo+k-1)/k)
		cmax := n.max
		if hi >= 0 && (cmax < 0 || hi/k < cmax) {
			cmax = hi / k
		}
		if cmax >= 0 && cmax < cmin {
			return nil, true, true
		}
		return &rxNode{kind: rxRepeat, subs: n.subs, min: cmin, max: cmax}, false, true
	}
	return nil, false, false
}

// rxSearch is the language of strings that contain a match of the
// branches (JSON Schema's `pattern`): each branch not anchored at a side
// gets any text on that side.
func rxSearch(branches []rxBranch) *rxNode {
	anyText := &rxNode{kind: rxRepeat, subs: []*rxNode{{kind: rxChar, set: cpAll}}, min: 0, max: -1}
	var alts []*rxNode
	for _, b := range branches {
		var items []*rxNode
		if !b.begin {
			items = append(items, anyText)
		}
		items = append(items, b.node)
		if !b.end {
			items = append(items, anyText)
		}
		alts = append(alts, rxSeq(items))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return &rxNode{kind: rxAlt, subs: alts}
}

// rxWhole is the branches as one expression with full-match semantics.
func rxWhole(branches []rxBranch) *rxNode {
	if len(branches) == 1 {
		return branches[0].node
	}
	alts := make([]*rxNode, len(branches))
	for i, b := range branches {
		alts[i] = b.node
	}
	return &rxNode{kind: rxAlt, subs: alts}
}
