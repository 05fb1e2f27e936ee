package grammar

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Reasoning is a model's thinking block (Qwen3's and DeepSeek-R1's
// <think>...</think>), which stays outside a constraint: the model thinks
// freely, and the grammar applies from the end of the block.
type Reasoning struct {
	Start, End string // the block's markers, ASCII
	// Opened: the prompt already opened the block (DeepSeek-R1's forced
	// "<think>\n"), so the text starts inside it. Otherwise the block is
	// optional at the start.
	Opened bool
}

// WithReasoning returns a grammar whose sentences are g's, optionally
// preceded by a thinking block: Start, any text that does not contain
// End, End, and up to 16 blanks (with Opened, the text starts inside the
// block and the block is required).
func WithReasoning(g *Grammar, r Reasoning) (*Grammar, error) {
	if r.End == "" || !isASCII(r.Start) || !isASCII(r.End) {
		return nil, fmt.Errorf("grammar: reasoning markers %q, %q must be non-empty ASCII", r.Start, r.End)
	}
	var b strings.Builder
	lit := gbnfQuote
	if r.Opened {
		fmt.Fprintf(&b, "root ::= free-0 %s blank inner\n", lit(r.End))
	} else {
		fmt.Fprintf(&b, "root ::= %s free-0 %s blank inner | inner\n", lit(r.Start), lit(r.End))
	}
	b.WriteString("blank ::= [ \\t\\r\\n]{0,16}\ninner ::= \"\\x00\"\n")
	writeNotContaining(&b, "free-", r.End)
	w, err := Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("grammar: the reasoning wrapper: %w", err)
	}
	return graft(w, w.ruleIndex("inner"), g), nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// writeNotContaining writes rules prefix0..prefix(n-1) for the texts that
// do not contain the ASCII string s: rule k is the text after a part whose
// longest suffix that begins s is k bytes (the KMP automaton of s), and
// may end anywhere.
func writeNotContaining(b *strings.Builder, prefix, s string) {
	n := len(s)
	// fail[k]: the longest proper border of s[:k].
	fail := make([]int, n+1)
	for k := 2; k <= n; k++ {
		j := fail[k-1]
		for j > 0 && s[j] != s[k-1] {
			j = fail[j]
		}
		if s[j] == s[k-1] {
			j++
		}
		fail[k] = j
	}
	delta := func(k int, c byte) int {
		for k > 0 && s[k] != c {
			k = fail[k]
		}
		if s[k] == c {
			return k + 1
		}
		return 0
	}
	for k := 0; k < n; k++ {
		var byTarget [][]byte = make([][]byte, n)
		for c := 0; c < 0x80; c++ {
			if j := delta(k, byte(c)); j < n {
				byTarget[j] = append(byTarget[j], byte(c))
			}
		}
		fmt.Fprintf(b, "%s%d ::= ", prefix, k)
		for j, cs := range byTarget {
			if len(cs) == 0 {
				continue
			}
			set := cpSet{}
			for _, c := range cs {
				set = set.union(cpRune(rune(c)))
			}
			if j == 0 { // a character outside ASCII is never part of s
				set = set.union(newCPSet(cpRange{0x80, utf8.MaxRune}))
			}
			fmt.Fprintf(b, "%s %s%d | ", gbnfClass(set), prefix, j)
		}
		b.WriteString("\"\"\n")
	}
}

func (g *Grammar) ruleIndex(name string) int32 {
	for i, n := range g.names {
		if n == name {
			return int32(i)
		}
	}
	return -1
}

// graft returns w with every reference to its rule hole replaced by a
// reference to g's root, g's rules appended after w's.
func graft(w *Grammar, hole int32, g *Grammar) *Grammar {
	nr, ns, ne := int32(len(w.alts)), int32(len(w.sets)), int32(len(w.elems))
	out := &Grammar{root: w.root}
	out.sets = append(append([]byteSet(nil), w.sets...), g.sets...)
	out.names = append(append([]string(nil), w.names...), g.names...)
	for _, e := range w.elems {
		if e.isRule() && e.rule == hole {
			e.rule = g.root + nr
		}
		out.elems = append(out.elems, e)
	}
	for _, e := range g.elems {
		switch {
		case !e.isRule():
			e.set += ns
		case e.rule >= 0:
			e.rule += nr
		}
		out.elems = append(out.elems, e)
	}
	out.alts = append(out.alts, w.alts...)
	for _, as := range g.alts {
		shifted := make([]int32, len(as))
		for i, a := range as {
			shifted[i] = a + ne
		}
		out.alts = append(out.alts, shifted)
	}
	return out
}
