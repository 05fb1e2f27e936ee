package api

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
)

// closeTagTools is issue 39's tool whose one argument must contain the
// Hermes end marker: a forced call spells it inside a JSON string. With
// other properties allowed, the tiny model goes on adding them until
// max_tokens; strictTools allows none, so its call ends.
const (
	closeTagTools = `[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"const":"ok</tool_call>tail"}},"required":["a"]}}}]`
	strictTools   = `[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"const":"ok</tool_call>tail"}},"required":["a"],"additionalProperties":false}}}]`
)

// TestToolCallForcedCloseTag: a forced call whose string argument holds
// </tool_call> is one call with its whole arguments, streamed and not (the
// marker inside a JSON string does not end the block). A reply cut by
// max_tokens is reported alike in both modes: cut inside the arguments,
// the call so far with finish_reason "length"; cut before them, content.
func TestToolCallForcedCloseTag(t *testing.T) {
	ctx := context.Background()
	e, _ := loadDir(t, convertedWith(t, "tiny-qwen3-q8_0.gguf", "tiny-qwen3", "qwen3"), 1024)
	rn := runner(e)
	whole := 0 // the tokens of the first case's reply
	for _, tc := range []struct {
		tools     string
		maxTokens int
		finish    string
		call      bool // the reply holds a call (else content)
	}{
		{strictTools, 200, FinishToolCalls, true},
		{closeTagTools, 200, "length", true},
		{strictTools, -4, "length", true},  // 4 tokens short of the whole call
		{strictTools, -25, "length", true}, // inside the string
		{strictTools, 6, "length", false},
	} {
		if tc.maxTokens < 0 {
			tc.maxTokens += whole
		}
		label := "max_tokens " + strconv.Itoa(tc.maxTokens)
		body := `{"messages":[{"role":"user","content":"Call f"}],"tools":` + tc.tools + `,"tool_choice":"required","parallel_tool_calls":false,` +
			`"temperature":0,"chat_template_kwargs":{"enable_thinking":false},"max_tokens":` + strconv.Itoa(tc.maxTokens)
		_, res, err := collect(t, rn, ctx, body+`}`, true)
		if err != nil {
			t.Fatal(err)
		}
		if whole == 0 {
			whole = int(res["usage"].(map[string]any)["completion_tokens"].(float64))
		}
		c := choice(res)
		msg := c["message"].(map[string]any)
		calls, _ := msg["tool_calls"].([]any)
		content, _ := msg["content"].(string)
		if c["finish_reason"] != tc.finish || tc.call && (msg["content"] != nil || len(calls) != 1) || !tc.call && (content == "" || len(calls) != 0) {
			t.Fatalf("%s: choice %v", label, c)
		}
		var name, args string
		if tc.call {
			fn := calls[0].(map[string]any)["function"].(map[string]any)
			name, args = fn["name"].(string), fn["arguments"].(string)
		}
		if tc.finish == FinishToolCalls {
			var a map[string]any
			if err := json.Unmarshal([]byte(args), &a); err != nil || a["a"] != "ok</tool_call>tail" || len(a) != 1 {
				t.Errorf("%s: arguments %q (%v), want {\"a\": \"ok</tool_call>tail\"}", label, args, err)
			}
		}
		chunks, _, err := collect(t, rn, ctx, body+`,"stream":true}`, true)
		if err != nil {
			t.Fatal(err)
		}
		sc, scalls, finish := reassemble(t, chunks)
		if sc != content || finish != tc.finish || len(scalls) != len(calls) || tc.call && (scalls[0].name != name || scalls[0].args != args) {
			t.Errorf("%s: stream content %q, calls %+v, finish %v; whole %q, %s(%s)", label, sc, scalls, finish, content, name, args)
		}
		t.Logf("%s: content %q, %s(%s), finish %s", label, content, name, args, c["finish_reason"])
	}
}
