package grammar

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustCompile(t *testing.T, src string) *Grammar {
	t.Helper()
	g, err := Compile(src)
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	return g
}

// matches reports whether s is a whole sentence of g.
func matches(g *Grammar, s string) bool {
	m := g.NewMatcher()
	return m.AcceptString(s) && m.CanEnd()
}

func TestGBNFLanguage(t *testing.T) {
	cases := []struct {
		src     string
		yes, no []string
	}{
		{`root ::= "a" | "bc"`, []string{"a", "bc"}, []string{"", "b", "ab", "abc"}},
		{`root ::= [a-c]+ "!"`, []string{"a!", "abcabc!"}, []string{"!", "ad!", "a"}},
		{`root ::= [^a-c]*`, []string{"", "xyz", "é", "日本"}, []string{"a", "xa"}},
		{`root ::= "x"{2,3}`, []string{"xx", "xxx"}, []string{"x", "xxxx"}},
		{`root ::= "x"{2}`, []string{"xx"}, []string{"x", "xxx"}},
		{`root ::= "x"{2,} "y"`, []string{"xxy", "xxxxxy"}, []string{"xy"}},
		{`root ::= ("ab" | "c")? "d"`, []string{"d", "abd", "cd"}, []string{"abcd"}},
		{"root ::= item (\",\" item)*\nitem ::= [0-9]+ # digits", []string{"1", "12,3,456"}, []string{"1,", ",1"}},
		{`root ::= "(" root ")" | ""`, []string{"", "()", "((()))"}, []string{"(()", ")"}},
		{`root ::= [α-ω]+`, []string{"αβγ", "ω"}, []string{"a", "Α"}},
		{`root ::= "\u00e9\x41\n\"\\"`, []string{"éA\n\"\\"}, nil},
		{`root ::= [\U0001F600-\U0001F64F]`, []string{"😀", "🙏"}, []string{"🚀"}},
		{`root ::= .`, []string{"a", "\u07ff", "\uffff", "\U0010ffff"}, []string{"", "ab"}},
		{"root ::=\n  \"a\"\n  | \"b\"\n", []string{"a", "b"}, []string{"ab"}},
		{`root ::= x*  x ::= "a"?`, nil, nil}, // parse error below
	}
	for _, c := range cases[:len(cases)-1] {
		g := mustCompile(t, c.src)
		for _, s := range c.yes {
			if !matches(g, s) {
				t.Errorf("%q: rejects %q", c.src, s)
			}
		}
		for _, s := range c.no {
			if matches(g, s) {
				t.Errorf("%q: accepts %q", c.src, s)
			}
		}
	}
}

func TestGBNFNullableRepeat(t *testing.T) {
	// A repeated item that can be empty is not left recursion: tail
	// references do not grow the stack.
	g := mustCompile(t, "root ::= x* \"!\"\nx ::= \"a\"?")
	for _, s := range []string{"!", "a!", "aaa!"} {
		if !matches(g, s) {
			t.Errorf("rejects %q", s)
		}
	}
}

func TestGBNFErrors(t *testing.T) {
	cases := []struct {
		src, want string
		off       int
	}{
		{``, "empty", 0},
		{`foo ::= "a"`, "no rule named root", 0},
		{`root ::= bar`, `"bar" is used but not defined`, 9},
		{`root ::= "a`, "unterminated string", 11},
		{`root ::= [a-`, "unterminated", 9},
		{`root ::= "a" ) "b"`, "end of the line", 13},
		{`root ::= ( "a"`, "unclosed parenthesis", 9},
		{`root ::= * "a"`, "follows nothing", 9},
		{`root ::= "a"{3,2}`, "maximum below", 12},
		{`root ::= "a"{99999}`, "over the limit", 13},
		{`root ::= root "a" | "b"`, "left-recursive", 0},
		{"root ::= a\na ::= b? a \"x\"\nb ::= \"y\"", "left-recursive", 11},
		{`root ::= "\q"`, `unknown escape \q`, 10},
		{`root ::= [z-a]`, "reversed", 9},
		{`root ::= <[123]>`, "token references", 9},
		{"root ::= \"a\"\nroot ::= \"b\"", "defined twice", 13},
	}
	for _, c := range cases {
		_, err := Compile(c.src)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a SyntaxError", c.src, err)
			continue
		}
		if !strings.Contains(se.Msg, c.want) || se.Offset != c.off {
			t.Errorf("%q: got %q at %d, want %q at %d", c.src, se.Msg, se.Offset, c.want, c.off)
		}
	}
}

// TestMaskAgainstBruteForce compares Mask with accepting each token on a
// clone, on random vocabularies and random walks through grammars.
func TestMaskAgainstBruteForce(t *testing.T) {
	grammars := []string{
		`root ::= "{" ws "\"a\"" ws ":" ws [0-9]+ ws "}"` + "\nws ::= [ \\n]*",
		`root ::= ([a-z]+ " ")* [a-z]+ "."`,
		`root ::= "é" [α-ω]* "!" | "日本" "語"?`,
		`root ::= "(" root ")" root | ""`,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "z", " ", ".", "{", "}", "\"", ":", "0", "9", "\n", "(", ")", "é", "α", "ω", "!", "日", "本", "語", "\xce", "\xb1", "\xe6\x97"}
	for gi, src := range grammars {
		g := mustCompile(t, src)
		for trial := 0; trial < 3; trial++ {
			n := 300
			toks := make([][]byte, n)
			for i := range toks {
				var b strings.Builder
				for k := rng.IntN(4) + 1; k > 0; k-- {
					b.WriteString(alphabet[rng.IntN(len(alphabet))])
				}
				toks[i] = []byte(b.String())
			}
			toks[7] = nil // a special token
			eos := []int32{3}
			v := NewVocab(n, func(id int32) []byte { return toks[id] }, eos, trial == 2)
			m := g.NewMatcher()
			mask := make([]uint32, v.MaskWords())
			for step := 0; step < 40; step++ {
				cnt := m.Mask(v, mask)
				var allowed []int32
				for id := int32(0); id < int32(n); id++ {
					bit := mask[id>>5]>>(id&31)&1 == 1
					if bit != m.Allows(v, id) {
						t.Fatalf("grammar %d step %d token %d %q: mask %v, accept %v", gi, step, id, toks[id], bit, !bit)
					}
					if bit {
						allowed = append(allowed, id)
					}
				}
				if cnt != len(allowed) {
					t.Fatalf("count %d, want %d", cnt, len(allowed))
				}
				if len(allowed) == 0 {
					break
				}
				id := allowed[rng.IntN(len(allowed))]
				if err := m.AcceptToken(v, id); err != nil {
					t.Fatal(err)
				}
				if m.Ended() {
					break
				}
			}
		}
	}
}
