package openai

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"wasmllm/api"
)

// TestForcedCallCloseTag is issue 39's repro over HTTP: a forced call
// whose string argument must hold </tool_call>. The tiny model keeps
// adding properties until max_tokens, so the reply is cut; whole and
// streamed, it is one call (named, with the same arguments, which keep
// the marker) and no content, with finish_reason "length".
func TestForcedCallCloseTag(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, true)
	req := map[string]any{}
	body := `{"model":"` + chatModel + `","messages":[{"role":"user","content":"Call f"}],` +
		`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"const":"ok</tool_call>tail"}},"required":["a"]}}}],` +
		`"tool_choice":"required","parallel_tool_calls":false,"temperature":0,"chat_template_kwargs":{"enable_thinking":false},"max_tokens":80}`
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	var whole api.ChatCompletion
	decode(t, te.post(t, "/v1/chat/completions", req), http.StatusOK, &whole)
	c := whole.Choices[0]
	if c.Message.Content != nil || len(c.Message.ToolCalls) != 1 || *c.FinishReason != "length" {
		t.Fatalf("whole: %+v, finish %s", c.Message, *c.FinishReason)
	}
	call := c.Message.ToolCalls[0].Function
	if call.Name != "f" || !strings.Contains(call.Arguments, `"ok</tool_call>tail"`) {
		t.Errorf("whole: call %+v", call)
	}

	req["stream"] = true
	var content, args, finish string
	var names []string
	for _, ev := range events(t, te.post(t, "/v1/chat/completions", req)) {
		var ch api.ChatCompletion
		if err := json.Unmarshal([]byte(ev), &ch); err != nil {
			t.Fatal(err)
		}
		d := ch.Choices[0].Delta
		if d.Content != nil {
			content += *d.Content
		}
		for _, tc := range d.ToolCalls {
			if tc.ID != "" {
				names = append(names, tc.Function.Name)
			}
			args += tc.Function.Arguments
		}
		if f := ch.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if content != "" || len(names) != 1 || names[0] != "f" || args != call.Arguments || finish != "length" {
		t.Errorf("stream: content %q, calls %v (%q), finish %q; whole %q", content, names, args, finish, call.Arguments)
	}
}
