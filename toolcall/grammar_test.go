package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"wasmllm/grammar"
)

const grammarTools = `[
 {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
  "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"], "additionalProperties": false}}},
 {"type": "function", "function": {"name": "now"}}
]`

func mustTools(t *testing.T, raw string) []Tool {
	t.Helper()
	tools, err := ParseTools(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

func compileFor(t *testing.T, f Format, tools []Tool, c Choice) *grammar.Grammar {
	t.Helper()
	src, err := Grammar(f, tools, c)
	if err != nil {
		t.Fatalf("%v %+v: %v", f, c, err)
	}
	g, err := grammar.Compile(src)
	if err != nil {
		t.Fatalf("%v %+v: compile: %v\n%s", f, c, err, src)
	}
	return g
}

// sentence reports whether s is a whole sentence of g.
func sentence(g *grammar.Grammar, s string) bool {
	m := g.NewMatcher()
	return m.AcceptString(s) && m.CanEnd()
}

// hermesCall, llamaCall and dsCalls spell calls as each template does.
func hermesCall(name, args string) string {
	return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>"
}

func llamaCall(name, args string) string {
	return "{\"name\": \"" + name + "\", \"parameters\": " + args + "}"
}

func dsCalls(calls ...[2]string) string {
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = dsCall + c[0] + "\n```json\n" + c[1] + "\n```" + dsCEnd
	}
	return dsBegin + strings.Join(parts, "\n") + dsEnd
}

func TestGrammar(t *testing.T) {
	tools := mustTools(t, grammarTools)
	paris := `{"city": "Paris"}`
	full := `{"city": "Paris", "unit": "c"}`
	type sample struct {
		text  string
		ok    bool
		calls []Call // of an accepted text
	}
	for _, c := range []struct {
		f       Format
		choice  Choice
		samples []sample
	}{
		{Hermes, Choice{Mode: ChoiceRequired}, []sample{
			{hermesCall("get_weather", paris), true, []Call{call("get_weather", paris)}},
			{hermesCall("get_weather", full), true, []Call{call("get_weather", full)}},
			{hermesCall("now", `{}`), true, []Call{call("now", `{}`)}},
			{hermesCall("now", `{"any": [1, {"x": null}]}`), true, []Call{call("now", `{"any": [1, {"x": null}]}`)}},
			{hermesCall("get_weather", paris) + "\n" + hermesCall("now", `{}`), true, []Call{call("get_weather", paris), call("now", `{}`)}},
			{hermesCall("get_weather", `{}`), false, nil},                         // city is required
			{hermesCall("get_weather", `{"city": 3}`), false, nil},                // not a string
			{hermesCall("get_weather", `{"city": "P", "unit": "k"}`), false, nil}, // not in the enum
			{hermesCall("get_weather", `{"city": "P", "x": 1}`), false, nil},      // no additional properties
			{hermesCall("get_time", `{}`), false, nil},
			{"Sure. " + hermesCall("now", `{}`), false, nil},
			{hermesCall("now", `{}`) + " bye", false, nil},
			{strings.TrimSuffix(hermesCall("now", `{}`), "</tool_call>"), false, nil},
			{"", false, nil},
		}},
		{Hermes, Choice{Mode: ChoiceRequired, Single: true}, []sample{
			{hermesCall("now", `{}`), true, []Call{call("now", `{}`)}},
			{hermesCall("get_weather", paris) + "\n" + hermesCall("now", `{}`), false, nil},
		}},
		{Hermes, Choice{Mode: ChoiceFunction, Name: "get_weather"}, []sample{
			{hermesCall("get_weather", paris), true, []Call{call("get_weather", paris)}},
			{hermesCall("now", `{}`), false, nil},
			{hermesCall("get_weather", paris) + "\n" + hermesCall("get_weather", paris), false, nil},
		}},
		{Llama3JSON, Choice{Mode: ChoiceRequired}, []sample{
			{llamaCall("get_weather", full), true, []Call{call("get_weather", full)}},
			{llamaCall("now", `{}`), true, []Call{call("now", `{}`)}},
			{`{"name": "now", "arguments": {}}`, false, nil},
			{llamaCall("now", `{}`) + "; " + llamaCall("now", `{}`), false, nil},
			{"<|python_tag|>" + llamaCall("now", `{}`), false, nil},
			{llamaCall("get_weather", `{"unit": "f"}`), false, nil},
		}},
		{Llama3JSON, Choice{Mode: ChoiceFunction, Name: "now"}, []sample{
			{llamaCall("now", `{"a": "b"}`), true, []Call{call("now", `{"a": "b"}`)}},
			{llamaCall("get_weather", paris), false, nil},
		}},
		{DeepSeekR1, Choice{Mode: ChoiceRequired}, []sample{
			{dsCalls([2]string{"get_weather", paris}), true, []Call{call("get_weather", paris)}},
			{dsCalls([2]string{"get_weather", paris}, [2]string{"now", `{}`}), true, []Call{call("get_weather", paris), call("now", `{}`)}},
			{strings.TrimSuffix(dsCalls([2]string{"now", `{}`}), dsEnd), false, nil},
			{dsCalls([2]string{"get_weather", `{"city": null}`}), false, nil},
			{dsCalls([2]string{"tomorrow", `{}`}), false, nil},
		}},
		{DeepSeekR1, Choice{Mode: ChoiceRequired, Single: true}, []sample{
			{dsCalls([2]string{"now", `{}`}), true, []Call{call("now", `{}`)}},
			{dsCalls([2]string{"now", `{}`}, [2]string{"now", `{}`}), false, nil},
		}},
	} {
		g := compileFor(t, c.f, tools, c.choice)
		for _, s := range c.samples {
			label := fmt.Sprintf("%v %+v: %q", c.f, c.choice, s.text)
			if got := sentence(g, s.text); got != s.ok {
				t.Errorf("%s: accepted %v, want %v", label, got, s.ok)
				continue
			}
			if !s.ok {
				continue
			}
			// What the grammar forces, Parse reads back.
			content, calls, _ := Parse(c.f, s.text)
			checkReply(t, label, replyCase{content: "", calls: s.calls}, content, calls)
		}
	}
}

// TestGrammarSentencesParse walks random sentences of the grammars (a
// random allowed byte at a time) and checks that each one Parse reads as
// calls of the allowed tools with no content left over.
func TestGrammarSentencesParse(t *testing.T) {
	tools := mustTools(t, grammarTools)
	g := gen{newRand(9)}
	for _, f := range []Format{Hermes, Llama3JSON, DeepSeekR1, Phi4Mini} {
		gr := compileFor(t, f, tools, Choice{Mode: ChoiceRequired})
		done := 0
		for range 60 {
			m := gr.NewMatcher()
			var b []byte
			for len(b) < 4000 && !(m.CanEnd() && g.r.IntN(2) == 0) {
				next := m.NextBytes()
				var allowed, closing []byte
				for c := range 256 {
					if !next[c] {
						continue
					}
					allowed = append(allowed, byte(c))
					if strings.IndexByte("}]\"", byte(c)) >= 0 {
						closing = append(closing, byte(c))
					}
				}
				if len(allowed) == 0 {
					break
				}
				c := allowed[g.r.IntN(len(allowed))]
				if len(closing) > 0 && g.r.IntN(2) == 0 { // so that walks end
					c = closing[g.r.IntN(len(closing))]
				}
				if !m.AcceptBytes([]byte{c}) {
					t.Fatalf("%v: NextBytes allowed %q but AcceptBytes refused it", f, c)
				}
				b = append(b, c)
			}
			if !m.CanEnd() {
				continue // the walk ran long; the sentence is unfinished
			}
			done++
			content, calls, _ := Parse(f, string(b))
			if content != "" || len(calls) == 0 {
				t.Errorf("%v: sentence %q parses as %q %+v", f, b, content, calls)
			}
			for _, c := range calls {
				if c.Name != "get_weather" && c.Name != "now" || !json.Valid([]byte(c.Arguments)) {
					t.Errorf("%v: sentence %q gives call %+v", f, b, c)
				}
			}
		}
		if done < 20 {
			t.Errorf("%v: only %d of 60 walks made a whole sentence", f, done)
		}
	}
}

func TestGrammarErrors(t *testing.T) {
	tools := mustTools(t, grammarTools)
	for _, c := range []struct {
		f      Format
		tools  []Tool
		choice Choice
		param  string
	}{
		{None, tools, Choice{Mode: ChoiceRequired}, "tool_choice"},
		{None, tools, Choice{Mode: ChoiceFunction, Name: "now"}, "tool_choice"},
		{Hermes, tools, Choice{Mode: ChoiceFunction, Name: "later"}, "tool_choice.function.name"},
		{Hermes, nil, Choice{Mode: ChoiceRequired}, "tool_choice"},
		{Hermes, []Tool{{Name: "a"}, {Name: "b", Parameters: json.RawMessage(`{"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}}`)}},
			Choice{Mode: ChoiceRequired}, "tools[1].function.parameters"},
	} {
		_, err := Grammar(c.f, c.tools, c.choice)
		var e *Error
		if !errors.As(err, &e) || e.Param != c.param {
			t.Errorf("%v %+v: error %v, want one about %s", c.f, c.choice, err, c.param)
		}
		if c.f == None && (err == nil || !strings.Contains(err.Error(), "no tool-call format")) {
			t.Errorf("None: %v", err)
		}
	}
	for _, m := range []Mode{ChoiceNone, ChoiceAuto} {
		if src, err := Grammar(Hermes, tools, Choice{Mode: m}); src != "" || err != nil {
			t.Errorf("mode %d: %q %v", m, src, err)
		}
	}
}
