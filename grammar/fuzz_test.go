package grammar

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit"
)

// Fuzz targets for the three front ends a request reaches with text of
// its own (response_format's JSON Schema and regex, a raw GBNF grammar):
// each either compiles or fails with its typed error, quickly and never
// by panicking, and what compiles drives a matcher. Seeds: the schemas of
// testdata/schemas, the tests' patterns and grammars, and the inputs of
// issue 39 (nested repetitions of empty-matching items that grew a
// server to 2 GB, and their non-empty variants that the matcher's bounds
// stop; schemas whose conversion was superlinear).

// fuzzSlow bounds one input's compile and match: the front ends' limits
// (MaxSchemaDepth, MaxSchemaGrammar, MaxSourceBytes) keep far under it.
const fuzzSlow = 2 * time.Second

// fuzzMatch walks a matcher over text while it is accepted and asks what
// may follow, as the sampler does.
func fuzzMatch(t *testing.T, g *Grammar, text []byte) {
	m := g.NewMatcher()
	for i := range text {
		_ = m.NextBytes()
		if !m.AcceptBytes(text[i : i+1]) {
			break
		}
	}
	_ = m.CanEnd()
	_ = m.Done()
}

func FuzzJSONSchema(f *testing.F) {
	paths, _ := filepath.Glob("testdata/schemas/*.json")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, []byte(`{"a": 1}`))
		}
	}
	f.Add([]byte(`{"type": "string", "pattern": "^[a-z]{2,5}$"}`), []byte(`"abc"`))
	f.Add([]byte(`{"$ref": "#"}`), []byte(`{}`))
	f.Add([]byte(`{"type":"string","pattern":"^([a-z]{0,200}){0,200}$"}`), []byte(`"`+strings.Repeat("a", 64)+`"`))
	f.Add([]byte(`{"type":"string","pattern":"^([a-z]{1,200}){0,200}$"}`), []byte(`"`+strings.Repeat("a", 64)+`"`))
	f.Add([]byte(`{"allOf":[{"properties":{"a":{"type":"integer"}}},{"properties":{"b":{"type":"integer"}}},{"required":["a"]}]}`), []byte(`{"a": 1, "b": 2}`))
	f.Add([]byte(`{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"},{"type":"boolean"}],"minItems":2}`), []byte(`[1, "a", true]`))
	f.Add([]byte(`{"type":"number","maximum":1e1000000}`), []byte(`1`))
	f.Fuzz(func(t *testing.T, schema, text []byte) {
		work := testkit.StartWork()
		src, err := JSONSchemaGBNF(schema)
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("JSONSchemaGBNF: %v (%T), want a *SchemaError", err, err)
			}
			return
		}
		g, err := Compile(src)
		if err != nil {
			t.Fatalf("the grammar of an accepted schema does not compile: %v\n%s", err, src)
		}
		fuzzMatch(t, g, text)
		if d := work(); d > fuzzSlow {
			t.Fatalf("took %v", d)
		}
	})
}

func FuzzRegex(f *testing.F) {
	for _, p := range []string{`^[a-z]+$`, `\d{3}-\d{4}`, `(ab|cd)*e?`, `[^\s]{1,8}`, `^(?:[A-Z][a-z]*\s?)+$`, `a{2,}b{0,3}`} {
		f.Add(p, []byte("abc-1234"))
	}
	for _, p := range []string{`(a{0,10000}){0,10000}`, `(a{1,100}){0,100}`, strings.Repeat("(", 70) + "a" + strings.Repeat(")", 70)} {
		f.Add(p, []byte(strings.Repeat("a", 64)))
	}
	f.Fuzz(func(t *testing.T, pattern string, text []byte) {
		work := testkit.StartWork()
		src, err := RegexGBNF(pattern)
		if err != nil {
			var re *RegexError
			if !errors.As(err, &re) {
				t.Fatalf("RegexGBNF(%q): %v (%T), want a *RegexError", pattern, err, err)
			}
			return
		}
		g, err := Compile(src)
		if err != nil {
			t.Fatalf("the grammar of an accepted pattern %q does not compile: %v", pattern, err)
		}
		fuzzMatch(t, g, text)
		if d := work(); d > fuzzSlow {
			t.Fatalf("took %v", d)
		}
	})
}

func FuzzGBNF(f *testing.F) {
	for _, s := range []string{
		`root ::= "yes" | "no"`,
		`root ::= item ("," item)*` + "\nitem ::= [a-z]+ | [0-9]{1,3}",
		`root ::= ("a" root "b")?`,
		`root ::= [^"\\] | "\\" .`,
		`root ::= x{2,4} # comment` + "\nx ::= [\\u0041-\\u005A]",
	} {
		f.Add(s, []byte("a,b,12"))
	}
	for _, s := range []string{
		`root ::= ("a"{0,10000}){0,10000}`, // 17 s for 64 bytes, before it was refused
		`root ::= ("a"{1,100}){0,100}`,
		"root ::= x{0,100}\nx ::= \"b\" | y\ny ::= \"\"",
	} {
		f.Add(s, []byte(strings.Repeat("a", 64)))
	}
	f.Fuzz(func(t *testing.T, src string, text []byte) {
		work := testkit.StartWork()
		g, err := Compile(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Compile: %v (%T), want a *SyntaxError", err, err)
			}
			return
		}
		fuzzMatch(t, g, text)
		if d := work(); d > fuzzSlow {
			t.Fatalf("took %v", d)
		}
	})
}
