package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"wasmllm/grammar"
	"wasmllm/toolcall"
)

const testSchema = `{"type":"object","properties":{"city":{"enum":["Paris","Rome"]}},"required":["city"],"additionalProperties":false}`

// TestParseConstraint: every accepted way of asking for structured
// output, on chat and on completions, gives its kind, names its field and
// compiles; text and unset forms give none.
func TestParseConstraint(t *testing.T) {
	for _, tc := range []struct{ extra, kind, param string }{
		{`"response_format":{"type":"json_object"}`, ConstraintJSONObject, "response_format"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":` + testSchema + `,"strict":true,"description":"d"}}`, ConstraintJSONSchema, "response_format.json_schema.schema"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"w"}}`, ConstraintJSONObject, "response_format.json_schema"},
		{`"response_format":{"type":"json_object","schema":` + jsonString(testSchema) + `}`, ConstraintJSONSchema, "response_format.schema"},
		{`"response_format":{"type":"grammar","grammar":"root ::= \"yes\" | \"no\""}`, ConstraintGrammar, "response_format.grammar"},
		{`"guided_json":` + testSchema, ConstraintJSONSchema, "guided_json"},
		{`"guided_json":` + jsonString(testSchema), ConstraintJSONSchema, "guided_json"},
		{`"guided_regex":"[a-z]{2,4}\\d"`, ConstraintRegex, "guided_regex"},
		{`"guided_choice":["yes","no"]`, ConstraintChoice, "guided_choice"},
		{`"guided_grammar":"root ::= [0-9]+"`, ConstraintGrammar, "guided_grammar"},
		{`"guided_choice":["a","b"],"guided_decoding_backend":"xgrammar"`, ConstraintChoice, "guided_choice"},
		{`"structured_outputs":{"json":` + testSchema + `}`, ConstraintJSONSchema, "structured_outputs.json"},
		{`"structured_outputs":{"json":` + jsonString(testSchema) + `}`, ConstraintJSONSchema, "structured_outputs.json"},
		{`"structured_outputs":{"regex":"a+","json":null}`, ConstraintRegex, "structured_outputs.regex"},
		{`"structured_outputs":{"choice":["x","y"]}`, ConstraintChoice, "structured_outputs.choice"},
		{`"structured_outputs":{"grammar":"root ::= \"a\""}`, ConstraintGrammar, "structured_outputs.grammar"},
		{`"structured_outputs":{"json_object":true}`, ConstraintJSONObject, "structured_outputs.json_object"},
	} {
		for _, chat := range []bool{true, false} {
			for _, fit := range []string{"", `,"fit_max_tokens":true`, `,"fit_max_tokens":false`, `,"fit_max_tokens":null`} {
				r, err := parseWith(chat, tc.extra+fit)
				if err != nil {
					t.Errorf("chat %v, %s: %v", chat, tc.extra+fit, err)
					continue
				}
				c := r.Constraint
				if c == nil || c.Kind != tc.kind || c.Param != tc.param || c.Grammar == nil || c.GBNF == "" || !r.Constrained() {
					t.Errorf("chat %v, %s: constraint %+v, want kind %s from %s", chat, tc.extra, c, tc.kind, tc.param)
				}
				if want := strings.Contains(fit, "true"); r.Engine.FitGrammar != want {
					t.Errorf("chat %v, %s: FitGrammar %v", chat, tc.extra+fit, r.Engine.FitGrammar)
				}
			}
		}
	}
	for _, extra := range []string{`"response_format":{"type":"text"}`, `"response_format":null`, `"guided_json":null`,
		`"guided_decoding_backend":"outlines"`, `"structured_outputs":{"json_object":false}`, `"structured_outputs":{}`} {
		r, err := parseWith(true, extra)
		if err != nil || r.Constraint != nil || r.Constrained() {
			t.Errorf("%s: %v, constraint %+v; want none", extra, err, r)
		}
	}
}

// TestConstraintGrammars: the grammars accept what the request asked for
// and nothing else.
func TestConstraintGrammars(t *testing.T) {
	for _, tc := range []struct {
		extra   string
		yes, no []string
	}{
		{`"guided_choice":["yes","no"]`, []string{"yes", "no"}, []string{"maybe", "ye", "yesno"}},
		{`"guided_regex":"[a-z]{2}\\d"`, []string{"ab1"}, []string{"a1", "ab", "AB1"}},
		{`"guided_json":` + testSchema, []string{`{"city":"Paris"}`, `{"city": "Rome"}`}, []string{`{"city":"Oslo"}`, `{}`, `[]`}},
		{`"response_format":{"type":"json_object"}`, []string{`{}`, `{"a":[1,2,{"b":null}]}`}, []string{`[]`, `"x"`, `{`}},
		{`"guided_grammar":"root ::= \"x\"+"`, []string{"x", "xxx"}, []string{"", "y"}},
	} {
		r, err := parseWith(true, tc.extra)
		if err != nil {
			t.Fatalf("%s: %v", tc.extra, err)
		}
		for _, s := range tc.yes {
			m := r.Constraint.Grammar.NewMatcher()
			if !m.AcceptString(s) || !m.CanEnd() {
				t.Errorf("%s: %q refused", tc.extra, s)
			}
		}
		for _, s := range tc.no {
			m := r.Constraint.Grammar.NewMatcher()
			if m.AcceptString(s) && m.CanEnd() {
				t.Errorf("%s: %q accepted", tc.extra, s)
			}
		}
	}
}

// TestParseConstraintErrors: what cannot be used is a bad_request naming
// the field, with the front end's position (offset, line, pointer).
func TestParseConstraintErrors(t *testing.T) {
	for _, tc := range []struct {
		extra, param string
		detail       string // a details key the error must have
		chatOnly     bool
	}{
		{`"response_format":{"type":"yaml"}`, "response_format.type", "", false},
		{`"response_format":{}`, "response_format.type", "", false},
		{`"response_format":"json"`, "response_format", "", false},
		{`"response_format":{"type":"json_schema"}`, "response_format.json_schema", "", false},
		{`"response_format":{"type":"json_schema","json_schema":"x"}`, "response_format.json_schema", "", false},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object","properties":{"a":{"$ref":"http://example.com/s"}}}}}`, "response_format.json_schema.schema", "pointer", false},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"nonsense"}}}`, "response_format.json_schema.schema", "pointer", false},
		{`"response_format":{"type":"grammar"}`, "response_format.grammar", "", false},
		{`"response_format":{"type":"grammar","grammar":"root ::= (\"a\""}`, "response_format.grammar", "line", false},
		{`"guided_json":"{not json"`, "guided_json", "", false},
		{`"guided_json":{"type":"string","pattern":"(?=x)"}`, "guided_json", "", false},
		{`"guided_regex":"a(b"`, "guided_regex", "offset", false},
		{`"guided_regex":"(?=x)y"`, "guided_regex", "offset", false},
		{`"guided_regex":3`, "guided_regex", "", false},
		{`"guided_choice":[]`, "guided_choice", "", false},
		{`"guided_choice":"yes"`, "guided_choice", "", false},
		{`"guided_grammar":"root ::= undefined-rule"`, "guided_grammar", "", false},
		{`"guided_grammar":""`, "guided_grammar", "", false},
		{`"guided_decoding_backend":3`, "guided_decoding_backend", "", false},
		{`"structured_outputs":[]`, "structured_outputs", "", false},
		{`"structured_outputs":{"structural_tag":"x"}`, "structured_outputs.structural_tag", "", false},
		{`"structured_outputs":{"regex":"("}`, "structured_outputs.regex", "offset", false},
		{`"structured_outputs":{"json_object":"yes"}`, "structured_outputs.json_object", "", false},
		{`"guided_regex":"a","fit_max_tokens":"yes"`, "fit_max_tokens", "", false},
		{`"guided_regex":"a","fit_max_tokens":1`, "fit_max_tokens", "", false},
		{`"guided_regex":"a","guided_choice":["a"]`, "guided_regex", "params", false},
		{`"response_format":{"type":"json_object"},"guided_json":{}`, "response_format", "params", false},
		{`"structured_outputs":{"regex":"a","choice":["a"]}`, "structured_outputs.regex", "params", false},
		{`"guided_choice":["a"],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"`, "tool_choice", "params", true},
	} {
		for _, chat := range []bool{true, false} {
			if tc.chatOnly && !chat {
				continue
			}
			_, err := parseWith(chat, tc.extra)
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeBadRequest || e.Details["param"] != tc.param {
				t.Errorf("chat %v, %s: %v, want a bad_request for %s", chat, tc.extra, err, tc.param)
				continue
			}
			if tc.detail != "" {
				if _, ok := e.Details[tc.detail]; !ok {
					t.Errorf("%s: details %v, want %s", tc.extra, e.Details, tc.detail)
				}
			}
			if !strings.Contains(e.Message, tc.param) {
				t.Errorf("%s: message %q does not name %s", tc.extra, e.Message, tc.param)
			}
		}
	}
	// Two constraints: the message names both.
	_, err := parseWith(true, `"guided_regex":"a","structured_outputs":{"choice":["a"]}`)
	if err == nil || !strings.Contains(err.Error(), "guided_regex") || !strings.Contains(err.Error(), "structured_outputs.choice") {
		t.Errorf("two constraints: %v", err)
	}
}

// TestParseTools: tools, every tool_choice and parallel_tool_calls, and
// their errors, each naming its field.
func TestParseTools(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":` + testSchema + `}},{"type":"function","function":{"name":"f"}}]`
	for _, tc := range []struct {
		extra    string
		mode     toolcall.Mode
		name     string
		single   bool
		template bool // the template sees the tools
	}{
		{tools, toolcall.ChoiceAuto, "", false, true},
		{tools + `,"tool_choice":"auto"`, toolcall.ChoiceAuto, "", false, true},
		{tools + `,"tool_choice":"none"`, toolcall.ChoiceNone, "", false, false},
		{tools + `,"tool_choice":"required"`, toolcall.ChoiceRequired, "", false, true},
		{tools + `,"tool_choice":"required","parallel_tool_calls":false`, toolcall.ChoiceRequired, "", true, true},
		{tools + `,"tool_choice":{"type":"function","function":{"name":"f"}}`, toolcall.ChoiceFunction, "f", false, true},
		{tools + `,"tool_choice":null,"parallel_tool_calls":true`, toolcall.ChoiceAuto, "", false, true},
		{`"tool_choice":"none"`, toolcall.ChoiceNone, "", false, false},
		{`"parallel_tool_calls":false`, toolcall.ChoiceNone, "", true, false},
	} {
		r, err := parseWith(true, tc.extra)
		if err != nil {
			t.Errorf("%s: %v", tc.extra, err)
			continue
		}
		ch := r.Tools.Choice
		if ch.Mode != tc.mode || ch.Name != tc.name || ch.Single != tc.single || (r.Engine.Chat.Tools != nil) != tc.template {
			t.Errorf("%s: choice %+v, template tools %s", tc.extra, ch, r.Engine.Chat.Tools)
		}
		if forced := tc.mode == toolcall.ChoiceRequired || tc.mode == toolcall.ChoiceFunction; r.Tools.Forced() != forced || r.Constrained() != forced {
			t.Errorf("%s: forced %v", tc.extra, r.Tools.Forced())
		}
	}
	for _, tc := range []struct{ extra, param string }{
		{`"tools":{}`, "tools"},
		{`"tools":[]`, "tools"},
		{`"tools":[{"type":"function","function":{"name":"bad name"}}]`, "tools[0].function.name"},
		{`"tools":[{"type":"retrieval"}]`, "tools[0].type"},
		{`"tool_choice":"required"`, "tool_choice"},
		{tools + `,"tool_choice":"sometimes"`, "tool_choice"},
		{tools + `,"tool_choice":{"type":"function","function":{"name":"g"}}`, "tool_choice.function.name"},
		{tools + `,"parallel_tool_calls":"no"`, "parallel_tool_calls"},
	} {
		_, err := parseWith(true, tc.extra)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest || e.Details["param"] != tc.param {
			t.Errorf("%s: %v, want a bad_request for %s", tc.extra, err, tc.param)
		}
	}
	// Completions have no tools.
	if _, err := ParseCompletion([]byte(`{"prompt":"x",` + tools + `}`)); err == nil {
		t.Error("completions accepted tools")
	}
	// Assistant tool calls in the history are checked at once.
	_, err := ParseChat([]byte(`{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{not json"}}]}]}`))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeBadRequest || !strings.HasPrefix(e.Details["param"].(string), "messages[1]") {
		t.Errorf("bad history arguments: %v", err)
	}
}

// TestGrammarCache: the same GBNF text gives the same grammar; the cache
// keeps at most its size, dropping the least recently used.
func TestGrammarCache(t *testing.T) {
	c := newGrammarLRU(2, GrammarCacheBytes)
	get := func(src string) (*grammar.Grammar, error) {
		e, err := c.get(cacheKey(ConstraintGrammar, src), func() (string, error) { return src, nil })
		if err != nil {
			return nil, err
		}
		return e.g, nil
	}
	a1, err := get(`root ::= "a"`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := get(`root ::= "b"`)
	if a2, _ := get(`root ::= "a"`); a2 != a1 {
		t.Error("a compiled twice")
	}
	get(`root ::= "c"`) // drops b, the least recently used
	if c.len() != 2 {
		t.Errorf("%d cached", c.len())
	}
	if a3, _ := get(`root ::= "a"`); a3 != a1 {
		t.Error("a dropped")
	}
	if b2, _ := get(`root ::= "b"`); b2 == b {
		t.Error("b kept")
	}
	if _, err := get(`root ::= (`); err == nil || c.len() != 2 {
		t.Errorf("bad grammar: %v, %d cached", err, c.len())
	}
	// Requests share the process's cache.
	r1, _ := parseWith(true, `"guided_choice":["cache","test"]`)
	r2, _ := parseWith(false, `"structured_outputs":{"choice":["cache","test"]}`)
	if r1.Constraint.Grammar != r2.Constraint.Grammar {
		t.Error("the same choices compiled twice")
	}
}

// TestGrammarCacheBytes: the cache bounds its grammars' memory, tables
// grown by use included: once the grammars it holds pass its bytes, the
// least recently used go, however few they are.
func TestGrammarCacheBytes(t *testing.T) {
	const budget = 4 << 20
	c := newGrammarLRU(16, budget)
	get := func(src string) *grammar.Grammar {
		e, err := c.get(cacheKey(ConstraintGrammar, src), func() (string, error) { return src, nil })
		if err != nil {
			t.Fatal(err)
		}
		return e.g
	}
	a := get(`root ::= [a-z]{0,9000}`)
	get(`root ::= "b"`)
	if c.len() != 2 {
		t.Fatalf("%d cached", c.len())
	}
	// Walk a's automaton through thousands of states (each a transition
	// row): its tables grow past the budget.
	m := a.NewMatcher()
	for i := 0; i < 8000 && a.Bytes() <= budget; i++ {
		if !m.AcceptString("x") {
			t.Fatalf("refused at %d", i)
		}
	}
	if a.Bytes() <= budget {
		t.Fatalf("a holds %d bytes, want over %d", a.Bytes(), budget)
	}
	get(`root ::= "b"`) // a use: a, the least recently used, goes
	if c.len() != 1 {
		t.Errorf("%d cached, want b alone", c.len())
	}
	if get(`root ::= [a-z]{0,9000}`) == a {
		t.Error("a kept")
	}
}

// TestConstraintCompiledLate: parsing checks a constraint's shape and size
// only; the compile (CompileConstraint, which Prepare calls) reads the
// schema, names the field in its errors, stops with the request's context,
// and is cached by the source's hash.
func TestConstraintCompiledLate(t *testing.T) {
	r, err := ParseChat([]byte(`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"nonsense"}}}}`))
	if err != nil || r.Constraint == nil || r.Constraint.Grammar != nil {
		t.Fatalf("parse: %v, %+v; want the constraint read, not compiled", err, r)
	}
	err = r.CompileConstraint(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeBadRequest || e.Details["param"] != "response_format.json_schema.schema" {
		t.Errorf("compile: %v, want a bad_request naming the schema", err)
	}
	// A client that leaves stops the compile: a schema that takes a while
	// (many allOf branches) gives aborted at once.
	var b strings.Builder
	b.WriteString(`{"allOf":[`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"properties":{"p%d":{"type":"integer"}}}`, i)
	}
	b.WriteString(`]}`)
	r, err = parseWith(false, "")
	if err != nil {
		t.Fatal(err)
	}
	r.Constraint = &Constraint{Param: "guided_json", Kind: ConstraintJSONSchema, source: b.String()}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	err = r.CompileConstraint(ctx)
	if !errors.As(err, &e) || e.Code != CodeAborted || time.Since(start) > time.Second {
		t.Errorf("cancelled compile: %v after %v, want aborted at once", err, time.Since(start))
	}
	// Compiled once, then found by the hash of its source.
	r1, _ := parseWith(true, `"guided_regex":"[a-z]{3}-late"`)
	r2, _ := parseWith(true, `"guided_regex":"[a-z]{3}-late"`)
	if r1.Constraint.Grammar == nil || r1.Constraint.Grammar != r2.Constraint.Grammar {
		t.Error("the same pattern compiled twice")
	}
}

// TestConstraintLimits (issue 39 #1 to #3): what would make a compile or
// a matcher costly is refused quickly, as a bad_request naming the field,
// with a short message (no echo of the source): sources past their size,
// nested repetitions of something that can be empty (through GBNF, a
// regex and a JSON Schema pattern), and schemas whose conversion does not
// fit its budget.
func TestConstraintLimits(t *testing.T) {
	big := strings.Repeat("a", grammar.MaxRegexBytes+1)
	var allOf strings.Builder
	allOf.WriteString(`{"allOf":[`)
	for i := 0; i < 5000; i++ {
		if i > 0 {
			allOf.WriteByte(',')
		}
		fmt.Fprintf(&allOf, `{"type":"object","properties":{"p%d":{"type":"integer"}}}`, i)
	}
	allOf.WriteString(`]}`)
	var prefix strings.Builder
	prefix.WriteString(`{"type":"array","prefixItems":[`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			prefix.WriteByte(',')
		}
		prefix.WriteString(`{"type":"integer"}`)
	}
	prefix.WriteString(`]}`)
	for _, tc := range []struct{ extra, param string }{
		{`"guided_regex":"` + big + `"`, "guided_regex"},
		{`"guided_grammar":"root ::= \"` + strings.Repeat("a", MaxConstraintBytes) + `\""`, "guided_grammar"},
		{`"guided_choice":["` + strings.Repeat("a", MaxConstraintBytes) + `"]`, "guided_choice"},
		{`"guided_json":{"enum":["` + strings.Repeat("a", MaxConstraintBytes) + `"]}`, "guided_json"},
		{`"guided_grammar":"root ::= (\"a\"{0,10000}){0,10000}"`, "guided_grammar"},
		{`"guided_regex":"(a{0,10000}){0,10000}"`, "guided_regex"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object","properties":{"x":{"type":"string","pattern":"^([a-z]{0,200}){0,200}$"}}}}}`, "response_format.json_schema.schema"},
		{`"guided_regex":"` + strings.Repeat("(", 100) + "a" + strings.Repeat(")", 100) + `"`, "guided_regex"},
		{`"guided_json":{"type":"integer","minimum":1e1000000}`, "guided_json"},
	} {
		start := time.Now()
		_, err := parseWith(false, tc.extra)
		d := time.Since(start)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest || e.Details["param"] != tc.param {
			t.Errorf("%.80s: %v, want a bad_request naming %s", tc.extra, err, tc.param)
			continue
		}
		if len(e.Message) > 400 {
			t.Errorf("%.80s: a message of %d bytes: %.200s", tc.extra, len(e.Message), e.Message)
		}
		if d > 2*time.Second {
			t.Errorf("%.80s: refused after %v", tc.extra, d)
		}
	}
	// Served: allOf of 5000 one-property objects is merged in one pass (two
	// by two it never answered), prefixItems of 20000 names each tail (it
	// nested them 20000 deep, past what the GBNF parser reads, in 12 GB).
	for _, tc := range []struct{ name, schema, text string }{
		{"allOf 5000", allOf.String(), `{"p0": 1, "p1": 2`},
		{"prefixItems 20000", prefix.String(), "[1, 2, 3"},
	} {
		start := time.Now()
		r, err := parseWith(false, `"guided_json":`+tc.schema)
		if err != nil || time.Since(start) > 5*time.Second {
			t.Errorf("%s: %v after %v", tc.name, err, time.Since(start))
			continue
		}
		if m := r.Constraint.Grammar.NewMatcher(); !m.AcceptString(tc.text) {
			t.Errorf("%s: %s refused", tc.name, tc.text)
		}
	}
}

// parseWith parses a request with extra fields and compiles its
// constraint, as the server does once the request is admitted.
func parseWith(chat bool, extra string) (*Request, error) {
	if extra != "" {
		extra = "," + extra
	}
	body := `{"prompt":"x"` + extra + `}`
	parse := ParseCompletion
	if chat {
		body = `{"messages":[{"role":"user","content":"x"}]` + extra + `}`
		parse = ParseChat
	}
	r, err := parse([]byte(body))
	if err != nil {
		return nil, err
	}
	return r, r.CompileConstraint(context.Background())
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
