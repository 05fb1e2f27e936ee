package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"wasmllm/internal/testkit"
)

// FuzzRequest takes a request body as an app sends it, chat or
// completion, through what runs before generation: the parse, Prepare on
// a Qwen3 model with a tool-calling template (tools, forced calls,
// response_format grammars, reasoning) and the prompt's rendering and
// tokenization. Whatever the body, each step either passes or fails with
// an *Error whose code names the cause: never internal (a bug), never a
// panic, and quickly.
func FuzzRequest(f *testing.F) {
	eng, _ := loadDir(f, converted(f, "tiny-qwen3-q8_0.gguf"), 1024)
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"}]}],"temperature":0.5,"top_k":3,"stop":["x"],"logit_bias":{"5":-100}}`,
		`{"messages":[{"role":"user","content":"w"}],"tools":[{"type":"function","function":{"name":"get","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"tool_choice":"required"}`,
		`{"messages":[{"role":"user","content":"w"},{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"get","arguments":"{\"city\":\"x\"}"}}]},{"role":"tool","tool_call_id":"1","content":"sunny"}]}`,
		`{"messages":[{"role":"user","content":"j"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object","properties":{"a":{"type":"integer","minimum":0}}}}}}`,
		`{"messages":[{"role":"user","content":"r"}],"chat_template_kwargs":{"enable_thinking":true},"structured_outputs":{"regex":"[a-z]+"}}`,
		`{"prompt":"Once upon","max_tokens":4,"logprobs":2,"echo":false}`,
		`{"prompt":[1,2,3],"structured_outputs":{"grammar":"root ::= \"a\""}}`,
	} {
		f.Add([]byte(s), s[2] != 'p')
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		work := testkit.StartWork()
		parse := ParseCompletion
		if chat {
			parse = ParseChat
		}
		r, err := parse(body)
		if err != nil {
			wantCoded(t, "parse", err)
			return
		}
		if err := Prepare(context.Background(), eng, r); err != nil {
			wantCoded(t, "Prepare", err)
			return
		}
		if _, err := eng.PromptIDs(&r.Engine); err != nil {
			wantCoded(t, "PromptIDs", Classify(err))
		}
		if d := work(); d > 2*time.Second {
			t.Fatalf("took %v", d)
		}
	})
}

// wantCoded checks err is an *Error with a code other than internal.
func wantCoded(t *testing.T, what string, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code == "" || e.Code == CodeInternal {
		t.Fatalf("%s: %v (%T), want an *Error with a code that names the cause", what, err, err)
	}
}
