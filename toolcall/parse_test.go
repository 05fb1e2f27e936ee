package toolcall

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

var idPattern = regexp.MustCompile(`^call_[A-Za-z0-9]{24}$`)

func checkReply(t *testing.T, label string, c replyCase, content string, calls []Call) {
	t.Helper()
	if content != c.content {
		t.Errorf("%s: content %q, want %q", label, content, c.content)
	}
	if len(calls) != len(c.calls) {
		t.Fatalf("%s: %d calls %+v, want %d %+v", label, len(calls), calls, len(c.calls), c.calls)
	}
	for i, got := range calls {
		want := c.calls[i]
		if got.Name != want.Name {
			t.Errorf("%s: call %d name %q, want %q", label, i, got.Name, want.Name)
		}
		if got.Arguments != want.Arguments {
			t.Errorf("%s: call %d arguments %q, want %q", label, i, got.Arguments, want.Arguments)
		}
		if !idPattern.MatchString(got.ID) {
			t.Errorf("%s: call %d id %q", label, i, got.ID)
		}
	}
}

func TestParse(t *testing.T) {
	for _, c := range replyCases {
		content, calls, err := Parse(c.f, c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkReply(t, c.name, c, content, calls)
	}
}

func TestParseIDs(t *testing.T) {
	text := "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>"
	_, c1, _ := ParseWith(Hermes, text, rand.New(rand.NewPCG(1, 2)))
	_, c2, _ := ParseWith(Hermes, text, rand.New(rand.NewPCG(1, 2)))
	_, c3, _ := ParseWith(Hermes, text, rand.New(rand.NewPCG(3, 4)))
	if len(c1) != 2 || c1[0].ID != c2[0].ID || c1[1].ID != c2[1].ID {
		t.Errorf("same seed, different ids: %+v %+v", c1, c2)
	}
	if c1[0].ID == c1[1].ID || c1[0].ID == c3[0].ID {
		t.Errorf("ids repeat: %+v %+v", c1, c3)
	}
	if a, b := NewID(nil), NewID(nil); a == b || !idPattern.MatchString(a) {
		t.Errorf("NewID: %q %q", a, b)
	}
}

func TestParseUnknownFormat(t *testing.T) {
	content, calls, err := Parse(Format(99), "x")
	if err == nil || content != "x" || calls != nil {
		t.Errorf("got %q %v %v", content, calls, err)
	}
}

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		tmpl string
		want Format
	}{
		{"{{ '<tool_call>\\n' }}", Hermes},
		{`{{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}`, Llama3JSON},
		{"{{ '<|start_header_id|>' }}{{ '<|python_tag|>' }}", Llama3JSON},
		{"{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + name + '\\n' + '```json'}} <tool_call>", DeepSeekR1},
		{"{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments']}}", None}, // V3.1
		{"{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}", None},                                                               // Qwen3-Coder
		{"{{ '<|start_header_id|>' + message['role'] }}", None},
		{"", None},
	} {
		if got := Detect(c.tmpl); got != c.want {
			t.Errorf("Detect(%q) = %v, want %v", c.tmpl, got, c.want)
		}
	}
	for f, s := range map[Format]string{None: "none", Hermes: "hermes", Llama3JSON: "llama3_json", DeepSeekR1: "deepseek_r1", Phi4Mini: "phi4_mini_json", 7: "Format(7)"} {
		if f.String() != s {
			t.Errorf("%d.String() = %q", int(f), f.String())
		}
	}
}

// TestParseCut: a reply cut inside a well-formed call is that call with
// its arguments so far, as a stream of it in any pieces reports it; a cut
// reply whose last block is already malformed, and one cut in the call's
// header, are read as Parse reads them (streamed in pieces, such a block
// may have been announced before it went wrong: see StreamParser).
func TestParseCut(t *testing.T) {
	for _, c := range []replyCase{
		{"hermes/cut in arguments", Hermes, "ok <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"b</tool_call>", "ok", []Call{call("f", `{"a": "b</tool_call>`)}},
		{"hermes/cut after a call", Hermes, "<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1",
			"", []Call{call("g", `{}`), call("f", `{"a": 1`)}},
		{"hermes/cut in a string", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"x</tool", "", []Call{call("f", `{"a": "x</tool`)}},
		{"hermes/cut in close marker", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"x\"}}\n</tool", "", []Call{call("f", `{"a": "x"}`)}},
		{"hermes/cut in header", Hermes, "<tool_call>\n{\"name\": \"f", "<tool_call>\n{\"name\": \"f", nil},
		{"hermes/cut after bad json", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": ]", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": ]", nil},
		{"llama/cut", Llama3JSON, "{\"name\": \"f\", \"parameters\": {\"a\": [1", "", []Call{call("f", `{"a": [1`)}},
		{"deepseek/cut", DeepSeekR1, dsBegin + dsCall + "f\n```json\n{\"a\": tr", "", []Call{call("f", `{"a": tr`)}},
		{"hermes/whole", Hermes, "<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>", "", []Call{call("g", `{}`)}},
	} {
		content, calls, err := ParseCut(c.f, c.text)
		if err != nil {
			t.Fatal(err)
		}
		checkReply(t, c.name, c, content, calls)
		if c.name == "hermes/cut after bad json" {
			continue
		}
		for i := 0; i <= len(c.text); i++ {
			content, calls := Collect(streamPieces(t, c.name, c.f, []string{c.text[:i], c.text[i:]}))
			if content != c.content || len(calls) != len(c.calls) || len(calls) > 0 && calls[len(calls)-1].Arguments != c.calls[len(calls)-1].Arguments {
				t.Errorf("%s split %d: streamed %q %+v", c.name, i, content, calls)
				break
			}
		}
	}
	if _, _, err := ParseCut(Format(99), "x"); err == nil {
		t.Error("ParseCut of an unknown format: no error")
	}
}
