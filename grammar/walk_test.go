package grammar

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Helpers shared by the front-end tests: random sentences of a grammar,
// drawn by walking the matcher, and whole-text acceptance with the offset
// where a text stops matching.

// walkOptions tune randomSentence.
type walkOptions struct {
	soft int  // after this many bytes, prefer ending and closing
	hard int  // give up after this many bytes
	json bool // the text is JSON: prefer closing strings, arrays and objects
}

var (
	jsonWalk = walkOptions{soft: 60, hard: 40000, json: true}
	textWalk = walkOptions{soft: 40, hard: 20000}
)

// randomSentence draws a random sentence of g: at each step a random byte
// that NextBytes allows, ending with some chance wherever CanEnd holds.
// Past opt.soft bytes it prefers ending, closing JSON strings and
// structures, and (with a one-byte lookahead) bytes after which the text
// can end or close. It fails on a dead end (no byte may follow and the text
// cannot end); long reports a walk abandoned at opt.hard bytes.
func randomSentence(g *Grammar, rng *rand.Rand, opt walkOptions) (text string, long bool, err error) {
	m := g.NewMatcher()
	var out []byte
	inString, escaped := false, false
	lookBudget := 300
	for len(out) < opt.hard {
		late := len(out) > opt.soft
		if m.CanEnd() {
			p := 0.2
			if late {
				p = 0.9
			}
			if rng.Float64() < p {
				return string(out), false, nil
			}
		}
		closers := "]}"
		if inString {
			closers = `"`
		}
		next := m.NextBytes()
		var cands []byte
		var weights []float64
		total := 0.0
		// The lookahead costs a step per candidate: try it on some steps
		// (a bounded number per walk), for about 24 of the candidates.
		rate := 0.3
		if lookBudget <= 0 {
			rate = 0.05
		}
		look := late && rng.Float64() < rate
		if look {
			lookBudget--
		}
		ncand := 0
		for c := range next {
			if next[c] {
				ncand++
			}
		}
		lookP := 24 / float64(max(ncand, 1))
		for c := 0; c < 256; c++ {
			if !next[c] {
				continue
			}
			w := 1.0
			switch {
			case c == ' ' || c == '\n' || c == '\t':
				w = 0.1
			case c >= 0x80:
				w = 0.15
			case c < 0x20:
				w = 0.3
			}
			if late && opt.json {
				switch {
				case strings.IndexByte(closers, byte(c)) >= 0:
					w *= 1000
				case !inString && strings.IndexByte("{[,", byte(c)) >= 0:
					w *= 0.01
				}
			}
			if look && rng.Float64() < lookP {
				a := m.Clone()
				a.AcceptBytes([]byte{byte(c)})
				switch {
				case a.CanEnd():
					w *= 1000
				case opt.json && a.Clone().AcceptString(closers[:1]):
					w *= 100
				}
			}
			cands = append(cands, byte(c))
			weights = append(weights, w)
			total += w
		}
		if len(cands) == 0 {
			if m.CanEnd() {
				return string(out), false, nil
			}
			return string(out), false, fmt.Errorf("dead end after %q: no byte may follow and the text cannot end", out)
		}
		x := rng.Float64() * total
		pick := cands[len(cands)-1]
		for i, w := range weights {
			if x < w {
				pick = cands[i]
				break
			}
			x -= w
		}
		if !m.AcceptBytes([]byte{pick}) {
			return string(out), false, fmt.Errorf("NextBytes allowed %q after %q but the matcher refused it", pick, out)
		}
		out = append(out, pick)
		switch {
		case escaped:
			escaped = false
		case inString && pick == '\\':
			escaped = true
		case pick == '"':
			inString = !inString
		}
	}
	return string(out), true, nil
}

// acceptWhole feeds text byte by byte; it returns -1 when all of it is
// accepted and the grammar can end there, else the offset where the
// matcher refused a byte (len(text) when it read everything but cannot
// end).
func acceptWhole(g *Grammar, text string) int {
	m := g.NewMatcher()
	for i := 0; i < len(text); i++ {
		if !m.AcceptBytes([]byte{text[i]}) {
			return i
		}
	}
	if !m.CanEnd() {
		return len(text)
	}
	return -1
}

// near shows text around offset off for failure messages.
func near(text string, off int) string {
	lo, hi := max(off-30, 0), min(off+30, len(text))
	return fmt.Sprintf("%q ⟨here⟩ %q", text[lo:off], text[off:hi])
}
