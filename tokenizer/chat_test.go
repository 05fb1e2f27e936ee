package tokenizer

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

type chatLine struct {
	Case     string                     `json:"case"`
	Messages []Message                  `json:"messages"`
	Kwargs   map[string]json.RawMessage `json:"kwargs"`
	Rendered string                     `json:"rendered"`
	IDs      []int32                    `json:"ids"`
	// Error, when set, is the template's own exception (raise_exception):
	// rendering must fail with it.
	Error string `json:"error"`
}

func kwargs(raw map[string]json.RawMessage) map[string]any {
	kw := make(map[string]any, len(raw))
	for k, v := range raw {
		kw[k] = v
	}
	return kw
}

// firstDiff describes where two strings first differ.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-40)
	return "first difference at byte " + itoa(i) + "\n  got  …" + quote(got[lo:min(len(got), i+60)]) + "\n  want …" + quote(want[lo:min(len(want), i+60)])
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestGoldenChat renders every golden chat with the model's own template
// and checks the string and its ids.
func TestGoldenChat(t *testing.T) {
	for _, name := range append(slices.Clone(goldenNames), "gemma3") {
		t.Run(name, func(t *testing.T) {
			tk := hfTok(t, filepath.Join("tokenizer", name))
			lines := readJSONL[chatLine](t, filepath.Join(testdata, "tokenizer", name+".chat.jsonl"))
			for n, c := range lines {
				got, err := tk.RenderChat(c.Messages, ChatOptions{Kwargs: kwargs(c.Kwargs)})
				if c.Error != "" {
					var te *TemplateError
					if !errors.As(err, &te) || !strings.Contains(err.Error(), c.Error) {
						t.Errorf("line %d (%s): rendered %q, error %v; want the template's error %q", n+1, c.Case, got, err, c.Error)
					}
					continue
				}
				if err != nil {
					t.Errorf("line %d (%s): %v", n+1, c.Case, err)
					continue
				}
				if got != c.Rendered {
					t.Errorf("line %d (%s): rendered text differs: %s", n+1, c.Case, firstDiff(got, c.Rendered))
					continue
				}
				if d := diffIDs(tk.mustEncode(got, false), c.IDs); d != "" {
					t.Errorf("line %d (%s): rendered %q\n%s", n+1, c.Case, got, d)
				}
			}
			t.Logf("%d chats", len(lines))
		})
	}
}

func TestMessageJSONRoundTrip(t *testing.T) {
	in := `{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"z":1,"a":2}}}],"content":null}`
	var m Message
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("round trip:\n got %s\nwant %s", out, in)
	}
	got, err := RenderChat("{{ messages[0]|tojson }}|{{ messages[0].content is none }}", []Message{m}, ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"z": 1, "a": 2}}}], "content": null}|True`; got != want {
		t.Errorf("render:\n got %s\nwant %s", got, want)
	}
}

// TestTemplateQuirks covers the source normalisation and the work-arounds
// for ardanlabs/jinja. The expected texts are Python Jinja2 3.1.6's output
// with Hugging Face's settings (trim_blocks, lstrip_blocks,
// keep_trailing_newline=False).
func TestTemplateQuirks(t *testing.T) {
	for _, c := range []struct{ tmpl, want string }{
		{"a {{ x }}{%- if true %}b{% endif %}", "a Xb"},
		{"a {{ x }}{{- 'y' }}", "a Xy"},
		{"a {{ x }}{#- c #}z", "a Xz"},
		{"a {{ x }} {%- if true %}b{% endif %}", "a Xb"},
		{"{{ '}}{%-' }}{%- if true %} b{% endif %}", "}}{%- b"},
		{"{% raw %}{{ x }}{%- x %}{% endraw %}", "{{ x }}{%- x %}"},
		{"line\r\n{{ x }}\r\n", "line\nX"},
		{"{{ x }}\n\n", "X\n"},
		{"{{ strftime_now('%Y-%m-%d %b %-d') }}", "2025-03-07 Mar 7"},
		{"{% if true %}\nX{% endif %}\nY", "XY"},
		{"A\n  {% if true %}\n  X\n  {% endif %}\nB", "A\n  X\nB"},
		{"A\n  {# c #}\nB", "A\nB"},
		{"  {%+ if true %}X{% endif %}", "  X"},
		{"{% if true +%}\nX{% endif %}", "\nX"},
		{"{% raw %}\n  {% x %}\n{% endraw %}\nZ", "\n  {% x %}\nZ"},
		{"A\n  {% raw %}\n  X\n  {% endraw %}\nB", "A\n\n  X\nB"},
		{"{% raw -%}\n  X{% endraw %}", "X"},
		{"{%- raw %}\nX{%- endraw %}\n", "\nX"},
		{"a {{ x }}{% raw %}\n{{ y }}{% endraw %}", "a X\n{{ y }}"},
	} {
		now := func() time.Time { return time.Date(2025, 3, 7, 9, 5, 0, 0, time.UTC) }
		got, err := RenderChat(c.tmpl, nil, ChatOptions{Kwargs: map[string]any{"x": "X"}, Now: now})
		if err != nil {
			t.Errorf("%q: %v", c.tmpl, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q: got %q, want %q", c.tmpl, got, c.want)
		}
	}
}

func TestChatErrors(t *testing.T) {
	if _, err := RenderChat("", nil, ChatOptions{}); !errors.Is(err, ErrNoChatTemplate) {
		t.Errorf("empty template: %v", err)
	}
	tk := llama2cTok(t)
	if _, err := tk.RenderChat([]Message{{Role: "user", Content: "hi"}}, ChatOptions{}); !errors.Is(err, ErrNoChatTemplate) {
		t.Errorf("model without template: %v", err)
	}
	var te *TemplateError
	_, err := RenderChat("{{ raise_exception('no system role') }}", nil, ChatOptions{})
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "no system role") {
		t.Errorf("raise_exception: %v", err)
	}
	if _, err := RenderChat("{% if %}", nil, ChatOptions{}); !errors.As(err, &te) || te.Stage != "compile" {
		t.Errorf("bad template: %v", err)
	}
}
