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
	for f, s := range map[Format]string{None: "none", Hermes: "hermes", Llama3JSON: "llama3_json", DeepSeekR1: "deepseek_r1", 7: "Format(7)"} {
		if f.String() != s {
			t.Errorf("%d.String() = %q", int(f), f.String())
		}
	}
}
