package grammar

import (
	"fmt"
	"sort"
	"sync"
)

// byteSet is a set of byte values.
type byteSet [4]uint64

func (s *byteSet) add(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s[c>>6] |= 1 << (c & 63)
	}
}

func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

// elem is one element of an alternative: a byte set (set >= 0, an index
// into builder.sets) or a reference to a rule.
type elem struct {
	set  int32 // index of the byte set, or -1 for a rule reference
	rule int32
}

func (e elem) isRule() bool { return e.set < 0 }

type rule struct {
	name    string
	alts    [][]elem
	defined bool
	off     int // where it was first named, for errors
	helper  bool
}

type builder struct {
	rules  []rule
	names  map[string]int
	sets   []byteSet
	setIDs map[byteSet]int32
	// classes caches the helper rule of each multi-byte class.
	classes map[string]int32
	nelems  int
	// reps are the bounded repetitions, checked once nullability is known.
	reps []repetition
}

// repetition is one x{lo,hi} of the source (hi -1: unbounded), item the
// element repeated, off where the operator is.
type repetition struct {
	item   elem
	lo, hi int
	off    int
}

// maxNullableRepeat bounds the copies of an item that can match the empty
// text in one repetition (x{m,n} with x nullable). Each copy is one more
// place the matcher may stand without having read a byte, so the stacks
// of a state multiply with the count, and with the count of an enclosing
// repetition: (x{0,10000}){0,10000} has 10^8 configurations. Past the
// bound the grammar is refused; a non-empty item has no such cost.
const maxNullableRepeat = 16

func newBuilder() *builder {
	return &builder{names: map[string]int{}, setIDs: map[byteSet]int32{}, classes: map[string]int32{}}
}

func (b *builder) ruleID(name string, off int) int {
	if id, ok := b.names[name]; ok {
		return id
	}
	b.rules = append(b.rules, rule{name: name, off: off})
	b.names[name] = len(b.rules) - 1
	return len(b.rules) - 1
}

func (b *builder) setElem(s byteSet) elem {
	id, ok := b.setIDs[s]
	if !ok {
		id = int32(len(b.sets))
		b.sets = append(b.sets, s)
		b.setIDs[s] = id
	}
	return elem{set: id, rule: -1}
}

func (b *builder) byteElem(lo, hi byte) elem {
	var s byteSet
	s.add(lo, hi)
	return b.setElem(s)
}

// appendRune appends the UTF-8 bytes of r.
func (b *builder) appendRune(seq []elem, r rune) []elem {
	var buf [4]byte
	n := encodeRune(buf[:], r)
	for _, c := range buf[:n] {
		seq = append(seq, b.byteElem(c, c))
	}
	return seq
}

// helper adds an anonymous rule with alts and returns a reference to it.
func (b *builder) helper(alts [][]elem) elem {
	if len(alts) == 1 && len(alts[0]) == 1 {
		return alts[0][0]
	}
	b.rules = append(b.rules, rule{name: fmt.Sprintf("_%d", len(b.rules)), alts: alts, defined: true, helper: true})
	for _, a := range alts {
		b.nelems += len(a) + 1
	}
	return elem{set: -1, rule: int32(len(b.rules) - 1)}
}

// classElem is one character of a (non-empty) set: a byte set when every
// character is ASCII, else a rule over the set's UTF-8 sequences.
func (b *builder) classElem(ranges cpSet) elem {
	if ranges[len(ranges)-1].hi < 0x80 {
		var s byteSet
		for _, r := range ranges {
			s.add(byte(r.lo), byte(r.hi))
		}
		return b.setElem(s)
	}
	key := fmt.Sprint(ranges)
	if id, ok := b.classes[key]; ok {
		return elem{set: -1, rule: id}
	}
	var alts [][]elem
	var ascii byteSet
	hasASCII := false
	for _, r := range ranges {
		utf8Sequences(r.lo, r.hi, func(seq []byteRange) {
			if len(seq) == 1 {
				ascii.add(seq[0].lo, seq[0].hi)
				hasASCII = true
				return
			}
			alt := make([]elem, len(seq))
			for i, br := range seq {
				alt[i] = b.byteElem(br.lo, br.hi)
			}
			alts = append(alts, alt)
		})
	}
	if hasASCII {
		alts = append([][]elem{{b.setElem(ascii)}}, alts...)
	}
	e := b.helper(alts)
	b.classes[key] = e.rule
	return e
}

// repeat expands item{lo,hi} (hi -1: unbounded) into elements, with
// helper rules for the optional and unbounded parts; off is where the
// operator is in the source, for errors.
func (b *builder) repeat(item []elem, lo, hi, off int) ([]elem, error) {
	one := item
	if len(item) != 1 {
		one = []elem{b.helper([][]elem{item})}
	}
	if max(lo, hi) > maxNullableRepeat {
		b.reps = append(b.reps, repetition{item: one[0], lo: lo, hi: hi, off: off})
	}
	if lo*len(one) > MaxElements || hi > 0 && hi*len(one) > MaxElements {
		return nil, fmt.Errorf("the repetition expands past %d elements", MaxElements)
	}
	var out []elem
	for i := 0; i < lo; i++ {
		out = append(out, one...)
	}
	switch {
	case hi < 0:
		// R ::= item R | ε
		b.rules = append(b.rules, rule{name: fmt.Sprintf("_%d", len(b.rules)), defined: true, helper: true})
		r := int32(len(b.rules) - 1)
		b.rules[r].alts = [][]elem{append(append([]elem(nil), one...), elem{set: -1, rule: r}), {}}
		b.nelems += len(one) + 3
		out = append(out, elem{set: -1, rule: r})
	case hi > lo:
		// (item (item ...)?)? nested hi-lo deep, built from the inside.
		var tail []elem
		for i := 0; i < hi-lo; i++ {
			alt := append(append([]elem(nil), one...), tail...)
			tail = []elem{b.helper([][]elem{alt, {}})}
		}
		out = append(out, tail...)
	}
	return out, nil
}

// Grammar is a compiled grammar. It is safe for concurrent use; the
// automaton's tables it builds lazily are shared by its matchers.
type Grammar struct {
	sets  []byteSet
	elems []elem    // every alternative's elements, each followed by an end marker
	alts  [][]int32 // per rule, the start of each alternative in elems
	names []string
	root  int32

	tabs tablesRef

	sizeOnce sync.Once
	size     int // the compiled form's bytes (see Bytes)

	restOnce sync.Once
	rest     []int32 // per element, the fewest bytes to its alternative's end (minRest)
}

// endMark is the element that ends an alternative.
var endMark = elem{set: -1, rule: -1}

func (g *Grammar) isEnd(pos int32) bool { e := g.elems[pos]; return e.set < 0 && e.rule < 0 }

// finish checks the rules and flattens them into a Grammar.
func (b *builder) finish(p *parser) (*Grammar, error) {
	root, ok := b.names["root"]
	if !ok {
		return nil, p.errorf(0, "the grammar has no rule named root")
	}
	for _, r := range b.rules {
		if !r.defined {
			return nil, p.errorf(r.off, "rule %q is used but not defined", clip(r.name))
		}
	}
	if b.nelems > MaxElements {
		return nil, p.errorf(0, "the grammar has over %d elements", MaxElements)
	}
	null := b.nullable()
	for _, r := range b.reps {
		if r.item.isRule() && null[r.item.rule] {
			return nil, p.errorf(r.off, "a repetition of over %d copies of an item that can match the empty text: its ways of matching multiply with the count (write the item so that it cannot be empty)", maxNullableRepeat)
		}
	}
	if name, off, ok := b.leftRecursion(null); ok {
		return nil, p.errorf(off, "rule %q is left-recursive (it can reach itself before reading any character)", clip(name))
	}
	g := &Grammar{sets: b.sets, root: int32(root)}
	g.alts = make([][]int32, len(b.rules))
	for i, r := range b.rules {
		g.names = append(g.names, r.name)
		for _, a := range r.alts {
			g.alts[i] = append(g.alts[i], int32(len(g.elems)))
			g.elems = append(g.elems, a...)
			g.elems = append(g.elems, endMark)
		}
	}
	return g, nil
}

// nullable reports the rules that can match the empty string. Each
// alternative counts the rules it still waits on; a rule found nullable
// releases the alternatives that name it, so the work is linear in the
// grammar's size whatever the order of its rules.
func (b *builder) nullable() []bool {
	null := make([]bool, len(b.rules))
	type alt struct{ rule, pending int32 }
	var alts []alt
	users := make([][]int32, len(b.rules)) // per rule, the alternatives naming it (once per mention)
	var ready []int32
	for i, r := range b.rules {
	next:
		for _, a := range r.alts {
			for _, e := range a {
				if !e.isRule() {
					continue next // a byte is never empty
				}
			}
			id := int32(len(alts))
			alts = append(alts, alt{rule: int32(i), pending: int32(len(a))})
			for _, e := range a {
				users[e.rule] = append(users[e.rule], id)
			}
			if len(a) == 0 {
				ready = append(ready, int32(i))
			}
		}
	}
	for len(ready) > 0 {
		r := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		if null[r] {
			continue
		}
		null[r] = true
		for _, id := range users[r] {
			if alts[id].pending--; alts[id].pending == 0 {
				ready = append(ready, alts[id].rule)
			}
		}
	}
	return null
}

// leftRecursion finds a rule that reaches itself through references that
// are preceded only by nullable elements, where one of the references on
// the cycle is not the last of its alternative (a tail reference does not
// grow the stack, and the matcher's expansion stops on repeats).
func (b *builder) leftRecursion(null []bool) (string, int, bool) {
	type edge struct {
		to   int
		tail bool
	}
	adj := make([][]edge, len(b.rules))
	for i, r := range b.rules {
		for _, a := range r.alts {
			for j, e := range a {
				if !e.isRule() {
					break
				}
				adj[i] = append(adj[i], edge{int(e.rule), j == len(a)-1})
				if !null[e.rule] {
					break
				}
			}
		}
	}
	// Tarjan's strongly connected components.
	n := len(b.rules)
	index, low, comp := make([]int, n), make([]int, n), make([]int, n)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	var stack []int
	onStack := make([]bool, n)
	next, ncomp := 0, 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, e := range adj[v] {
			if index[e.to] < 0 {
				visit(e.to)
				low[v] = min(low[v], low[e.to])
			} else if onStack[e.to] {
				low[v] = min(low[v], index[e.to])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = ncomp
				if w == v {
					break
				}
			}
			ncomp++
		}
	}
	for v := 0; v < n; v++ {
		if index[v] < 0 {
			visit(v)
		}
	}
	var bad []int
	for v := 0; v < n; v++ {
		for _, e := range adj[v] {
			if !e.tail && comp[e.to] == comp[v] {
				bad = append(bad, v)
			}
		}
	}
	if len(bad) == 0 {
		return "", 0, false
	}
	sort.Ints(bad)
	// Name a rule the user wrote, if the cycle has one.
	for _, v := range bad {
		if !b.rules[v].helper {
			return b.rules[v].name, b.rules[v].off, true
		}
	}
	for v := range b.rules {
		if comp[v] == comp[bad[0]] && !b.rules[v].helper {
			return b.rules[v].name, b.rules[v].off, true
		}
	}
	return b.rules[bad[0]].name, 0, true
}
