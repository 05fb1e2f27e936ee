package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fewestTokens is a breadth-first search over bytes from m: the fewest
// tokens (one per byte, then EOS unless nothing can follow) that end the
// text, or -1 past limit bytes.
func fewestTokens(m *Matcher, limit int) int {
	frontier := []*Matcher{m}
	seen := map[int32]bool{m.state: true}
	best := -1
	for depth := 0; depth <= limit && len(frontier) > 0; depth++ {
		var next []*Matcher
		for _, c := range frontier {
			if c.CanEnd() {
				n := depth + 1
				if c.Done() {
					n = depth
				}
				if best < 0 || n < best {
					best = n
				}
			}
			nb := c.NextBytes()
			for b := range 256 {
				if !nb[b] {
					continue
				}
				d := c.Clone()
				if d.AcceptBytes([]byte{byte(b)}) && !seen[d.state] {
					seen[d.state] = true
					next = append(next, d)
				}
			}
		}
		if best >= 0 && best <= depth+1 {
			return best
		}
		frontier = next
	}
	return best
}

// TestMinTokens: MinTokens is the fewest tokens a byte-by-byte search
// finds, or one more (it counts an EOS after the shortest text even where
// nothing could follow it), from every state of random walks.
func TestMinTokens(t *testing.T) {
	grammars := []string{
		`root ::= "abc"`,
		`root ::= "ab" [0-9]{3,5}`,
		`root ::= "(" root ")" root | ""`,
		`root ::= item ("," item)*` + "\nitem ::= \"[\" item? \"]\" | [a-z]{2}",
		`root ::= "é" [α-ω]{2,} "!" | "日本" "語"?`,
		JSONGBNF,
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for gi, src := range grammars {
		g := mustCompile(t, src)
		for walk := range 20 {
			m := g.NewMatcher()
			for step := range 30 {
				got := m.MinTokens()
				want := fewestTokens(m, 64)
				if want < 0 || got < want || got > want+1 {
					t.Fatalf("grammar %d walk %d step %d: MinTokens %d, search %d", gi, walk, step, got, want)
				}
				nb := m.NextBytes()
				var cands []byte
				for b := range 256 {
					if nb[b] {
						cands = append(cands, byte(b))
					}
				}
				if len(cands) == 0 {
					break
				}
				m.AcceptBytes([]byte{cands[rng.IntN(len(cands))]})
			}
		}
	}
}

// fitVocab is every single byte, some JSON-shaped pieces that open and
// close several structures at once, and EOS (id 0).
func fitVocab() *Vocab {
	toks := [][]byte{nil}
	for b := range 256 {
		toks = append(toks, []byte{byte(b)})
	}
	for _, s := range []string{`{"`, `":`, `": "`, `"}`, `"]`, `"}]`, `}]}`, `[[`, `[{"`, `, "`, `", "`, `true`, `null`, `false`, `12`, `-0.5`, `e+`, "hello", "ab", "日本", `\u00`, `\"`, " {\n", "\n  "} {
		toks = append(toks, []byte(s))
	}
	return NewVocab(len(toks), func(id int32) []byte { return toks[id] }, []int32{0}, false)
}

// TestMaskWithin: random generations through every schema of the suite
// and through GBNF grammars, each token drawn from MaskWithin with the
// tokens left, end within their budget every time, budgets down to the
// fewest tokens the start needs; every allowed token leaves a text that
// fits, and the budgeted mask is the plain one whenever the budget does
// not bind.
func TestMaskWithin(t *testing.T) {
	files, err := filepath.Glob("testdata/schemas/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("%d schemas (%v)", len(files), err)
	}
	var gs []*Grammar
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var sf struct {
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(data, &sf); err != nil {
			t.Fatal(err)
		}
		gs = append(gs, compileSchema(t, sf.Schema))
		names = append(names, filepath.Base(f))
	}
	for _, src := range []string{JSONGBNF, `root ::= "(" root ")" root | ""`, `root ::= ([a-z]+ " ")* [a-z]+ "."`} {
		gs = append(gs, mustCompile(t, src))
		names = append(names, src[:min(len(src), 20)])
	}
	v := fitVocab()
	rng := rand.New(rand.NewPCG(5, 6))
	mask := make([]uint32, v.MaskWords())
	plain := make([]uint32, v.MaskWords())
	steps, bound := 0, 0
	for gi, g := range gs {
		start := g.NewMatcher().MinTokens()
		if start > 300 {
			continue // minLength 10001: covered by the engine's samples
		}
		for walk := range 12 {
			budget := start + rng.IntN(24)
			m := g.NewMatcher()
			var text strings.Builder
			used := 0
			for !m.Done() {
				left := budget - used
				if left <= 0 {
					t.Fatalf("%s walk %d: no end within %d tokens (start needs %d): %q", names[gi], walk, budget, start, text.String())
				}
				n := m.MaskWithin(v, mask, left)
				nPlain := m.Mask(v, plain)
				var allowed []int32
				same := true
				for id := int32(0); id < int32(v.Size()); id++ {
					in := mask[id>>5]>>(id&31)&1 == 1
					if in != (plain[id>>5]>>(id&31)&1 == 1) {
						same = false
						if in {
							t.Fatalf("%s: token %d allowed within the budget but not by Mask", names[gi], id)
						}
					}
					if in {
						allowed = append(allowed, id)
					}
				}
				if len(allowed) != n || n == 0 {
					t.Fatalf("%s walk %d: %d allowed, count %d", names[gi], walk, len(allowed), n)
				}
				for _, id := range allowed {
					c := m.Clone()
					if err := c.AcceptToken(v, id); err != nil {
						t.Fatal(err)
					}
					if c.MinTokens() > left-1 {
						t.Fatalf("%s walk %d: token %q leaves %d tokens to end, %d left", names[gi], walk, v.views[0].toks[id], c.MinTokens(), left-1)
					}
				}
				steps++
				if !same {
					bound++
					binds := false
					for id := int32(0); id < int32(v.Size()) && !binds; id++ {
						if plain[id>>5]>>(id&31)&1 == 1 {
							c := m.Clone()
							binds = c.AcceptToken(v, id) == nil && c.MinTokens() > left-1
						}
					}
					if !binds || n == nPlain {
						t.Fatalf("%s walk %d: the budget of %d left changed a mask it does not bind", names[gi], walk, left)
					}
				}
				id := allowed[rng.IntN(len(allowed))]
				if err := m.AcceptToken(v, id); err != nil {
					t.Fatal(err)
				}
				used++
				if m.Ended() {
					break
				}
				text.Write(v.views[0].toks[id])
			}
			if used > budget {
				t.Fatalf("%s: %d tokens for a budget of %d", names[gi], used, budget)
			}
		}
	}
	t.Logf("%d grammars, %d steps, the budget bound %d", len(gs), steps, bound)
	if bound*10 < steps {
		t.Errorf("the budget bound only %d of %d steps", bound, steps)
	}
}
