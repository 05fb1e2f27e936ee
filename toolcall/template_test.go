package toolcall

import (
	"encoding/json"
	"errors"
	"testing"

	"wasmllm/tokenizer"
)

func decodeMessages(t *testing.T, s string) []tokenizer.Message {
	t.Helper()
	var msgs []tokenizer.Message
	if err := json.Unmarshal([]byte(s), &msgs); err != nil {
		t.Fatal(err)
	}
	return msgs
}

func encode(t *testing.T, msgs []tokenizer.Message) string {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const historyJSON = `[
 {"role": "user", "content": "Weather in Paris?"},
 {"role": "assistant", "content": null, "tool_calls": [
  {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"c\"}"}},
  {"id": "call_2", "type": "function", "function": {"arguments": "", "name": "now"}}]},
 {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 18}"},
 {"role": "assistant", "tool_calls": [{"id": "call_3", "type": "function", "function": {"name": "f", "arguments": {"already": true}}}]},
 {"role": "assistant", "content": "It is 18 °C."}
]`

func TestTemplateMessages(t *testing.T) {
	in := decodeMessages(t, historyJSON)
	before := encode(t, in)
	out, err := TemplateMessages(in)
	if err != nil {
		t.Fatal(err)
	}
	if encode(t, in) != before {
		t.Error("the input was modified")
	}
	want := `[{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris","unit":"c"}}},` +
		`{"id":"call_2","type":"function","function":{"arguments":{},"name":"now"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"{\"temp\": 18}"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"call_3","type":"function","function":{"name":"f","arguments":{"already":true}}}]},` +
		`{"role":"assistant","content":"It is 18 °C."}]`
	if got := encode(t, out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Key order survives into the template, as Python's json.loads keeps it.
	r, err := tokenizer.RenderChat("{{ messages[1].tool_calls[0].function.arguments | tojson }}|{{ messages[1].content is string }}", out, tokenizer.ChatOptions{})
	if err != nil || r != `{"city": "Paris", "unit": "c"}|True` {
		t.Errorf("render: %q %v", r, err)
	}
}

func TestTemplateMessagesFor(t *testing.T) {
	in := decodeMessages(t, `[{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
	 {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "g", "arguments": "{}"}}]}]`)
	out, err := TemplateMessagesFor(DeepSeekR1, in)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"g","arguments":"{}"}}]}]`
	if got := encode(t, out); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	out, err = TemplateMessagesFor(Hermes, in)
	if err != nil || encode(t, out) != `[{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"f","arguments":{"a":1}}}]},{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"g","arguments":{}}}]}]` {
		t.Errorf("Hermes: %s %v", encode(t, out), err)
	}
}

func TestTemplateMessagesErrors(t *testing.T) {
	for _, c := range []struct{ msgs, param string }{
		{`[{"role": "user", "content": "x"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]}]`,
			"messages[1].tool_calls[0].function.arguments"},
		{`[{"role": "assistant", "tool_calls": {"function": {}}}]`, "messages[0].tool_calls"},
		{`[{"role": "assistant", "tool_calls": [{"function": {}}, 3]}]`, "messages[0].tool_calls[1]"},
		{`[{"role": "assistant", "tool_calls": [{"function": "f"}]}]`, "messages[0].tool_calls[0].function"},
	} {
		_, err := TemplateMessages(decodeMessages(t, c.msgs))
		var e *Error
		if !errors.As(err, &e) || e.Param != c.param {
			t.Errorf("%s: error %v, want one about %s", c.msgs, err, c.param)
		}
	}
}
