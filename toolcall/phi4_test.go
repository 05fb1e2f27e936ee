package toolcall

import (
	"encoding/json"
	"os"
	"testing"

	"wasmllm/tokenizer"
)

// Phi-4-mini's replies (vLLM's phi4_mini_json): a functools[...] list of
// call objects after any text; run by TestParse, TestStreamEverySplit and
// the rest of the reply-case suites.
func init() {
	replyCases = append(replyCases, []replyCase{
		{"phi4/text", Phi4Mini, "Hello [there] functools", "Hello [there] functools", nil},
		{"phi4/one call", Phi4Mini, `functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]`,
			"", []Call{call("get_weather", `{"city": "Paris"}`)}},
		{"phi4/two calls", Phi4Mini, "functools[ {\"name\": \"a\", \"arguments\": {\"x\": [1, 2]}} ,\n{\"name\": \"b\", \"parameters\": {}} ]",
			"", []Call{call("a", `{"x": [1, 2]}`), call("b", `{}`)}},
		{"phi4/text around", Phi4Mini, "Let me check. functools[{\"name\": \"f\", \"arguments\": {\"s\": \"]}\"}}] Done.",
			"Let me check.  Done.", []Call{call("f", `{"s": "]}"}`)}},
		{"phi4/no arguments", Phi4Mini, `functools[{"name": "now"}]`, "", []Call{call("now", `{}`)}},
		{"phi4/bad call", Phi4Mini, `functools[{"name": 3, "arguments": {}}]`, `functools[{"name": 3, "arguments": {}}]`, nil},
		{"phi4/not a list of objects", Phi4Mini, "functools[1, 2]", "functools[1, 2]", nil},
		{"phi4/unclosed list", Phi4Mini, `functools[{"name": "f", "arguments": {"a": 1}}`, "", []Call{call("f", `{"a": 1}`)}},
		{"phi4/text after a call", Phi4Mini, `functools[{"name": "f", "arguments": {}}; x`, "; x", []Call{call("f", `{}`)}},
	}...)
}

// TestPhi4MiniTemplate: Phi-4-mini's template (tools in the system
// message) is detected as Phi4Mini, Phi-3.5-mini's as None; PhiSystemTools
// puts the request's tools, as Phi-4-mini's function list, into the
// system message (a new one when there is none), and history's calls
// become functools[...] content.
func TestPhi4MiniTemplate(t *testing.T) {
	for file, want := range map[string]Format{"phi-4-mini-instruct.jinja": Phi4Mini, "phi-3.5-mini-instruct.jinja": None} {
		raw, err := os.ReadFile("../testdata/chat/phi3/templates/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if got := Detect(string(raw)); got != want {
			t.Errorf("%s: Detect %v, want %v", file, got, want)
		}
	}
	tools := []byte(`[{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]`)
	wantTools := `[{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	msgs := mustMessages(t, `[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
		{"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]`)
	out, err := PhiSystemTools(msgs, tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 || out[0].Content != "Be brief." || string(extraField(out[0], "tools")) != jsonQuote(wantTools) {
		t.Fatalf("system message %+v, tools %s; want %s", out[0], extraField(out[0], "tools"), jsonQuote(wantTools))
	}
	if extraField(msgs[0], "tools") != nil {
		t.Errorf("msgs was modified")
	}
	out, err = TemplateMessagesFor(Phi4Mini, out)
	if err != nil {
		t.Fatal(err)
	}
	if want := `functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]`; out[2].Content != want {
		t.Errorf("assistant call as content %q, want %q", out[2].Content, want)
	}
	// The template renders them: the tools between <|tool|> and
	// <|/tool|>, the earlier call as the assistant's text.
	src, err := os.ReadFile("../testdata/chat/phi3/templates/phi-4-mini-instruct.jinja")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tokenizer.RenderChat(string(src), out, tokenizer.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|system|>Be brief.<|tool|>" + wantTools + "<|/tool|><|end|><|user|>Weather?<|end|>" +
		`<|assistant|>functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|end|><|tool|>sunny<|end|><|assistant|>`
	if got != want {
		t.Errorf("rendered\n%s\nwant\n%s", got, want)
	}
	out, err = PhiSystemTools(msgs[1:2], tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Role != "system" || out[0].Content != "" || string(extraField(out[0], "tools")) != jsonQuote(wantTools) {
		t.Errorf("without a system message: %+v", out)
	}
	got, err = tokenizer.RenderChat(string(src), out, tokenizer.ChatOptions{AddGenerationPrompt: true})
	if want := "<|system|><|tool|>" + wantTools + "<|/tool|><|end|><|user|>Weather?<|end|><|assistant|>"; err != nil || got != want {
		t.Errorf("rendered %q, %v; want %q", got, err, want)
	}
}

func mustMessages(t *testing.T, raw string) []tokenizer.Message {
	t.Helper()
	var msgs []tokenizer.Message
	if err := json.Unmarshal([]byte(raw), &msgs); err != nil {
		t.Fatal(err)
	}
	return msgs
}
