package grammar

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit"
)

// Regression tests for issue 39 #1 to #3: grammars, patterns and schemas
// that cost unbounded time or memory are refused quickly with their typed
// error, and the matcher's tables stay within their bounds whatever the
// grammar.

// TestNullableRepetitionRefused: a repetition of over 16 copies of
// something that can match the empty text is refused at compile time, in
// GBNF, in a regex and in a JSON Schema pattern, at the operator
// ((a{0,10000}){0,10000} took a server to 2 GB at 0.4 tokens/s); up to 16,
// and unbounded repetitions of such items, are served.
func TestNullableRepetitionRefused(t *testing.T) {
	for _, tc := range []struct {
		src string
		off int
	}{
		{`root ::= ("a"{0,10000}){0,10000}`, 23},
		{`root ::= ("a"?){17}`, 15},
		{"root ::= x{0,100}\nx ::= \"b\" | y\ny ::= \"\"", 10},
		{`root ::= ("a"{1,5} | ""){20,}`, 24},
	} {
		work := testkit.StartWork()
		_, err := Compile(tc.src)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, "empty text") || se.Offset != tc.off {
			t.Errorf("%q: %v, want a SyntaxError about the empty text at %d", tc.src, err, tc.off)
		}
		if d := work(); d > time.Second {
			t.Errorf("%q: refused after %v", tc.src, d)
		}
	}
	for _, tc := range []struct{ src, yes string }{
		{`root ::= ("a"?){16}`, "aaaa"},
		{`root ::= ("a"*)*`, "aaaa"},
		{`root ::= ("a"? "b"?)* "c"`, "abbac"},
		{`root ::= ("a"{1,3}){0,100}`, "aaaaaaa"},
	} {
		if g := mustCompile(t, tc.src); !matches(g, tc.yes) {
			t.Errorf("%q: %q refused", tc.src, tc.yes)
		}
	}

	_, err := RegexGBNF(`(a{0,10000}){0,10000}`)
	var re *RegexError
	if !errors.As(err, &re) || re.Offset != 12 || !strings.Contains(re.Msg, "empty text") {
		t.Errorf("regex: %v, want a RegexError about the empty text at 12", err)
	}
	_, err = JSONSchemaGBNF([]byte(`{"type":"object","properties":{"x":{"type":"string","pattern":"^([a-z]{0,200}){0,200}$"}}}`))
	var sc *SchemaError
	if !errors.As(err, &sc) || sc.Keyword != "pattern" || sc.Pointer != "/properties/x/pattern" || !strings.Contains(sc.Msg, "empty text") {
		t.Errorf("schema: %v, want a SchemaError at /properties/x/pattern", err)
	}
}

// TestMatcherBounds: a grammar that compiles but whose configurations
// multiply with the text (nested repetitions of non-empty items whose
// copies nothing delimits) stops its matcher with a *LimitError once the
// tables pass their bound: the memory the walk takes stays within it, a
// stopped matcher allows and accepts nothing, and new matchers start on
// fresh tables.
func TestMatcherBounds(t *testing.T) {
	g := mustCompile(t, `root ::= ("a"{1,100}){0,100}`)
	v := fitVocab()
	mask := make([]uint32, v.MaskWords())
	a := int32(1 + 'a')

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	work := testkit.StartWork()
	m := g.NewMatcher()
	n := 0
	for ; n < 10000; n++ {
		if m.Mask(v, mask) == 0 || m.AcceptToken(v, a) != nil {
			break
		}
	}
	d := work()
	runtime.ReadMemStats(&after)
	var le *LimitError
	if !errors.As(m.Err(), &le) {
		t.Fatalf("after %d bytes: Err %v, want a *LimitError", n, m.Err())
	}
	t.Logf("stopped after %d bytes in %v, %d MiB allocated, %d KiB held", n, d, (after.TotalAlloc-before.TotalAlloc)>>20, g.Bytes()>>10)
	if held := g.Bytes(); held > 1<<20 {
		t.Errorf("the grammar holds %d KiB: it keeps the failed tables", held>>10)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*hardTableBytes {
		t.Errorf("the walk allocated %d MiB", alloc>>20)
	}
	if d > 10*time.Second {
		t.Errorf("stopped after %v", d)
	}
	if m.Mask(v, mask) != 0 || !errors.Is(m.AcceptToken(v, a), m.Err()) || m.AcceptString("a") {
		t.Error("a stopped matcher goes on")
	}
	// The tables that failed are not handed out again.
	m2 := g.NewMatcher()
	if m2.t == m.t || m2.Err() != nil || !m2.AcceptString("aaa") {
		t.Error("a new matcher does not start on fresh tables")
	}
}

// TestStartStateBound: a grammar whose start state alone has more stacks
// than a state may hold is refused by Compile.
func TestStartStateBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("root ::= ")
	for i := 0; i < maxStateStacks+1; i++ {
		if i > 0 {
			b.WriteString(" | ")
		}
		fmt.Fprintf(&b, `"%c"`, 'a'+i%26)
	}
	_, err := Compile(b.String())
	var se *SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "at the start") {
		t.Errorf("%v, want a SyntaxError about the start", err)
	}
}

// TestCompileLinear: GBNF whose rules chain through nullable references
// compiles in linear time (it took 165 s for 4 MiB: nullability was a
// fixpoint over every rule per step of the chain).
func TestCompileLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("root ::= r0\n")
	const n = 20000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "r%d ::= r%d\n", i, i+1)
	}
	fmt.Fprintf(&b, "r%d ::= \"x\" | \"\"\n", n)
	work := testkit.StartWork()
	g := mustCompile(t, b.String())
	if d := work(); d > 2*time.Second {
		t.Errorf("compiled in %v", d)
	}
	if !matches(g, "x") || !matches(g, "") {
		t.Error("the chain does not match x and the empty text")
	}
}

// TestSchemaBudget: JSON Schema conversions are linear where they were
// not (allOf of N one-property objects merged two by two, prefixItems
// nested N deep), bounded where they cannot be (a pairwise comparison of
// enums), stopped by their context, and refuse numbers too large to work
// with exactly.
func TestSchemaBudget(t *testing.T) {
	list := func(n int, item func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = item(i)
		}
		return strings.Join(parts, ",")
	}
	allOf := `{"allOf":[` + list(5000, func(i int) string {
		return fmt.Sprintf(`{"type":"object","properties":{"p%d":{"type":"integer"}}}`, i)
	}) + `]}`
	prefix := `{"type":"array","prefixItems":[` + list(20000, func(int) string { return `{"type":"integer"}` }) + `]}`
	for _, tc := range []struct{ name, schema, text string }{
		{"allOf 5000", allOf, `{"p0": 1, "p1": 2, "p2": 3`},
		{"prefixItems 20000", prefix, "[1, 2, 3, 4"},
	} {
		work := testkit.StartWork()
		src, err := JSONSchemaGBNF([]byte(tc.schema))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		g := mustCompile(t, src)
		if d := work(); d > 5*time.Second {
			t.Errorf("%s: took %v", tc.name, d)
		}
		if m := g.NewMatcher(); !m.AcceptString(tc.text) {
			t.Errorf("%s: %s refused", tc.name, tc.text)
		}
	}

	nums := list(3000, func(i int) string { return fmt.Sprint(i) })
	for _, tc := range []struct{ name, schema, want string }{
		{"enum pairs", `{"allOf":[{"enum":[` + nums + `]},{"enum":[` + nums + `]}]}`, "steps"},
		{"huge exponent", `{"type":"number","maximum":1e1000000}`, "exponent"},
		{"long number", `{"enum":[` + strings.Repeat("1", 2000) + `]}`, "characters"},
	} {
		work := testkit.StartWork()
		_, err := JSONSchemaGBNF([]byte(tc.schema))
		var se *SchemaError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, tc.want) {
			t.Errorf("%s: %v, want a SchemaError about %s", tc.name, err, tc.want)
		}
		if d := work(); d > 2*time.Second {
			t.Errorf("%s: refused after %v", tc.name, d)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := JSONSchemaGBNFContext(ctx, []byte(allOf)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestErrorsClipped: errors name a pattern, rule, keyword or reference by
// its first bytes, never the megabytes a request sent (a 4 MiB pattern
// came back whole in the 400).
func TestErrorsClipped(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	_, err1 := RegexGBNF(long)
	_, err2 := RegexGBNF(long[:1000] + "(")
	_, err3 := Compile("root ::= " + long)
	_, err4 := JSONSchemaGBNF([]byte(`{"$ref":"http://` + long[:100000] + `"}`))
	_, err5 := JSONSchemaGBNF([]byte(`{"properties":{"` + long[:100000] + `":{"type":"nonsense"}}}`))
	_, err6 := Compile(`root ::= "a"{` + strings.Repeat("9", 100000) + `}`)
	for i, err := range []error{err1, err2, err3, err4, err5, err6} {
		if err == nil || len(err.Error()) > 400 {
			t.Errorf("error %d: %d bytes: %.200v", i+1, len(fmt.Sprint(err)), err)
		}
	}
}
