package grammar

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// genObject is the expression for objects under f's object keywords:
// the declared properties in order (optional ones may be skipped), then
// required names that properties does not declare, then additional
// properties, whose names differ from every declared one (so that a
// repeated name cannot override a checked value).
func (c *jsCompiler) genObject(f *jsSchema, depth int) (string, bool, error) {
	type entry struct {
		name     string
		expr     string
		required bool
	}
	var entries []entry
	var names []string
	required := map[string]bool{}
	for _, r := range f.required {
		required[r] = true
	}
	addEntry := func(name string, s *jsSchema) (bool, error) {
		names = append(names, name)
		req := required[name]
		e, never, err := c.genSub(s, depth)
		if err != nil {
			return false, err
		}
		if never {
			return !req, nil
		}
		entries = append(entries, entry{name, e, req})
		return true, nil
	}
	for _, p := range f.props {
		ok, err := addEntry(p.name, p.schema)
		if err != nil || !ok {
			return "", !ok, err
		}
	}
	if err := c.spend(len(f.props) + len(f.required)); err != nil {
		return "", false, err
	}
	idx := f.propIndex()
	for _, r := range f.required {
		if _, declared := f.propIn(idx, r); declared {
			continue
		}
		ok, err := addEntry(r, f.addl)
		if err != nil || !ok {
			return "", !ok, err
		}
	}
	sp := c.rule("space")
	extra := ""
	addl, never, err := c.genSub(f.addl, depth)
	if err != nil {
		return "", false, err
	}
	if !never {
		extra = gSeq(c.keyNotIn(names), `":"`, sp, addl)
	}
	if len(entries) == 0 && extra == gSeq(c.rule("string"), `":"`, sp, c.rule("value")) {
		return c.rule("object"), false, nil
	}
	// after: the rest once something is written; first: the rest when
	// nothing is yet. Named at each step so the size stays linear.
	after, first := "", ""
	if extra != "" {
		after = c.w.rule("obj-more", c.w.repeat(gSeq(`","`, sp, extra), 0, -1))
		first = c.w.repeat(gSeq(extra, after), 0, 1)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		kv := gSeq(gbnfQuote(`"`+jsonStringContent(e.name)+`"`), sp, `":"`, sp, e.expr)
		var na, nf string
		if e.required {
			na = gSeq(`","`, sp, kv, after)
			nf = gSeq(kv, after)
		} else {
			na = gSeq(c.w.repeat(gSeq(`","`, sp, kv), 0, 1), after)
			nf = gAlt(gSeq(kv, after), first)
		}
		if i > 0 {
			if na != "" {
				na = c.w.rule("obj-after", na)
			}
			nf = c.w.rule("obj-rest", nf)
		}
		after, first = na, nf
	}
	return gSeq(`"{"`, sp, first, `"}"`, sp), false, nil
}

// keyNotIn is a JSON string (with trailing space) whose value is none of
// names. Along the names' shared prefixes each character is written one
// way (no \u escapes but for control characters); after the first
// character no name continues with, anything goes.
func (c *jsCompiler) keyNotIn(names []string) string {
	if len(names) == 0 {
		return c.rule("string")
	}
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	key := strings.Join(sorted, "\x00")
	c.spend(len(key))
	if n, ok := c.keyRules[key]; ok {
		return n
	}
	sp := c.rule("space")
	// node(lo, hi, depth): the names sorted[lo:hi] share their first depth
	// bytes (the text so far).
	var node func(lo, hi, depth int) string
	node = func(lo, hi, depth int) string {
		if c.w.err != nil {
			return "" // past the size limit: the conversion fails
		}
		var alts []string
		if len(sorted[lo]) > depth {
			alts = append(alts, gSeq(`"\""`, sp)) // the text so far is no name
		}
		for lo < hi && len(sorted[lo]) == depth {
			lo++ // a name ends here: the key cannot
		}
		used := cpSet{}
		for i := lo; i < hi; {
			r, n := utf8.DecodeRuneInString(sorted[i][depth:])
			j := i
			for j < hi && strings.HasPrefix(sorted[j][depth:], string(r)) {
				j++
			}
			used = used.union(cpRune(r))
			alts = append(alts, gSeq(gbnfQuote(jsonEscapeRune(r)), node(i, j, depth+n)))
			i = j
		}
		// Any other character: raw, or a short escape of a character no
		// name continues with.
		if raw := cpAll.minus(jsonSpecial).minus(used); !raw.empty() {
			alts = append(alts, gSeq(gbnfCharExpr(raw), c.rule("key-end")))
		}
		var esc []cpRange
		for _, p := range [...]struct{ letter, value rune }{
			{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', '\b'}, {'f', '\f'}, {'n', '\n'}, {'r', '\r'}, {'t', '\t'}} {
			if !used.has(p.value) {
				esc = append(esc, cpRange{p.letter, p.letter})
			}
		}
		if len(esc) > 0 {
			alts = append(alts, gSeq(`"\\"`, gbnfCharExpr(newCPSet(esc...)), c.rule("key-end")))
		}
		return c.w.rule("key", strings.Join(alts, " | "))
	}
	name := gSeq(`"\""`, node(0, len(sorted), 0))
	c.keyRules[key] = name
	return name
}
