package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestParseCompat: what OpenAI and WebLLM clients send is either used as
// they mean it or refused with a bad_request naming the field, never
// dropped silently.
func TestParseCompat(t *testing.T) {
	msg := `[{"role":"user","content":"x"}]`
	chat := func(extra string) (*Request, error) {
		return ParseChat([]byte(`{"messages":` + msg + extra + `}`))
	}
	// Accepted: nulls of optional fields, every response_format, every
	// tool_choice, parallel_tool_calls (structured_test.go checks what
	// each means).
	tool := `,"tools":[{"type":"function","function":{"name":"f"}}]`
	for _, extra := range []string{
		`,"top_logprobs":null`, `,"logprobs":null,"top_logprobs":null`, `,"response_format":{"type":"text"}`,
		`,"response_format":null`, `,"response_format":{"type":"json_object"}`, `,"response_format":{"type":"json_schema","json_schema":{}}`,
		`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"},"strict":true}}`,
		`,"response_format":{"type":"grammar","grammar":"root ::= \"x\""}`, `,"guided_choice":["a","b"]`,
		`,"tool_choice":"auto"` + tool, `,"tool_choice":null`, `,"parallel_tool_calls":false`, `,"tool_choice":"none"`,
		`,"tool_choice":"required"` + tool, `,"tool_choice":{"type":"function","function":{"name":"f"}}` + tool,
		`,"n":null,"seed":null,"stop":null,"stream_options":null,"max_completion_tokens":null`,
	} {
		if _, err := chat(extra); err != nil {
			t.Errorf("%s: %v", extra, err)
		}
	}
	// tool_choice "none": the template does not see the tools.
	r, err := chat(`,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"`)
	if err != nil || r.Engine.Chat.Tools != nil {
		t.Errorf("tool_choice none: %v, tools %s", err, r.Engine.Chat.Tools)
	}
	r, err = chat(`,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"`)
	if err != nil || r.Engine.Chat.Tools == nil {
		t.Errorf("tool_choice auto: %v", err)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"messages":[{"role":"narrator","content":"x"}]}`, "messages[0].role"},
		{`{"messages":[{"role":"user","content":"x"},{"role":"function","content":"x"}]}`, "messages[1].role"},
		{`{"messages":[{"role":"user"}]}`, "messages[0].content"},
		{`{"messages":[{"role":"user","content":null}]}`, "messages[0].content"},
		{`{"messages":[{"role":"user","content":3}]}`, "messages[0].content"},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "messages[0].content[0].type"},
		{`{"messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages[0].content[0].type"},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":3}]}]}`, "messages[0].content[0].text"},
		{`{"messages":["hi"]}`, "messages[0]"},
		{`{"messages":` + msg + `,"max_tokens":0}`, "max_tokens"},
		{`{"messages":` + msg + `,"max_completion_tokens":0}`, "max_completion_tokens"},
		{`{"messages":` + msg + `,"response_format":{"type":"yaml"}}`, "response_format.type"},
		{`{"messages":` + msg + `,"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"nonsense"}}}}`, "response_format.json_schema.schema"},
		{`{"messages":` + msg + `,"tool_choice":"required"}`, "tool_choice"},
		{`{"messages":` + msg + `,"tools":[]}`, "tools"},
		{`{"messages":` + msg + `,"tool_choice":{"type":"function","function":{"name":"g"}}` + tool + `}`, "tool_choice.function.name"},
		{`{"messages":` + msg + `,"parallel_tool_calls":"yes"}`, "parallel_tool_calls"},
		{`{"messages":` + msg + `,"top_logprobs":2}`, "top_logprobs"},
	} {
		r, err := ParseChat([]byte(tc.body))
		if err == nil {
			err = r.CompileConstraint(context.Background()) // a schema is read when it is compiled
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest || e.Details["param"] != tc.param {
			t.Errorf("%s: %v, want a bad_request for %s", tc.body, err, tc.param)
		}
	}
	if _, err := ParseCompletion([]byte(`{"prompt":"x","max_tokens":0}`)); err == nil {
		t.Error("completion max_tokens 0 accepted")
	}
}

// TestParseMessages: developer becomes system, text parts are joined, the
// keys keep their order, and an assistant may have no content.
func TestParseMessages(t *testing.T) {
	r, err := ParseChat([]byte(`{"messages":[{"role":"developer","content":"be brief"},
		{"content":[{"type":"text","text":"one"},{"type":"text","text":"two"}],"role":"user","name":"bob"},
		{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","content":"42","tool_call_id":"c1"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := r.Engine.Messages
	if m[0].Role != "system" || m[0].Content != "be brief" {
		t.Errorf("developer message %+v", m[0])
	}
	if m[1].Role != "user" || m[1].Content != "one\ntwo" {
		t.Errorf("content parts %+v", m[1])
	}
	b, _ := json.Marshal(m[1])
	if string(b) != `{"content":"one\ntwo","role":"user","name":"bob"}` {
		t.Errorf("key order: %s", b)
	}
	if m[2].Role != "assistant" || m[3].Role != "tool" {
		t.Errorf("messages %+v", m)
	}
}

// TestStreamUsageChunk: with include_usage the stream ends with a chunk of
// usage and no choices, after the finish chunk (which has none); without it
// no chunk has usage. The finish chunk carries the timings either way.
func TestStreamUsageChunk(t *testing.T) {
	e, _ := loadDir(t, converted(t, "tiny-qwen3-q8_0.gguf"), 256)
	rn := runner(e)
	for _, include := range []bool{true, false} {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":5,"temperature":0,"stream":true,"stream_options":{"include_usage":%v}}`, include)
		chunks, _, err := collect(t, rn, context.Background(), body, true)
		if err != nil {
			t.Fatal(err)
		}
		n := len(chunks)
		if include {
			last := chunks[n-1]
			u, _ := last["usage"].(map[string]any)
			if cs := last["choices"].([]any); len(cs) != 0 || u == nil || u["completion_tokens"] != 5.0 || last["object"] != ObjectChatCompletionChunk {
				t.Errorf("usage chunk %v", last)
			}
			n--
		}
		fin := chunks[n-1]
		if choice(fin)["finish_reason"] != "length" || fin["usage"] != nil || fin["timings"] == nil {
			t.Errorf("include_usage %v: finish chunk %v", include, fin)
		}
		for _, c := range chunks[:n-1] {
			if c["usage"] != nil || choice(c)["finish_reason"] != nil {
				t.Errorf("include_usage %v: chunk %v", include, c)
			}
		}
		if d := choice(chunks[0])["delta"].(map[string]any); d["role"] != "assistant" {
			t.Errorf("first chunk %v", chunks[0])
		}
	}
}

// TestStreamFailsBeforeFirstChunk: a stream that fails before its first
// token sends no chunk at all, so the page's create() rejects.
func TestStreamFailsBeforeFirstChunk(t *testing.T) {
	e, _ := loadDir(t, converted(t, "tiny-qwen3-q8_0.gguf"), 32)
	rn := runner(e)
	long := strings.Repeat("hello ", 60)
	chunks, _, err := collect(t, rn, context.Background(), `{"messages":[{"role":"user","content":"`+long+`"}],"stream":true}`, true)
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != CodeContextOverflow || len(chunks) != 0 {
		t.Errorf("error %v after %d chunks, want context_overflow before any", err, len(chunks))
	}
}

// TestNChoices: n choices come back with indexes 0..n-1; with a seed,
// choice i is what a single request with seed+i gives; usage counts the
// prompt once and every choice's completion. A stream sends the choices
// one after another, each with its index and finish chunk.
func TestNChoices(t *testing.T) {
	e, _ := loadDir(t, converted(t, "stories260K.gguf"), 0)
	rn := runner(e)
	body := `{"prompt":"Lily","max_tokens":12,"temperature":1,"seed":%d,"n":%d%s}`
	_, res, err := collect(t, rn, context.Background(), fmt.Sprintf(body, 3, 3, ""), false)
	if err != nil {
		t.Fatal(err)
	}
	cs := res["choices"].([]any)
	if len(cs) != 3 {
		t.Fatalf("%d choices", len(cs))
	}
	texts := map[string]bool{}
	for i, c := range cs {
		c := c.(map[string]any)
		_, one, err := collect(t, rn, context.Background(), fmt.Sprintf(body, 3+i, 1, ""), false)
		if err != nil {
			t.Fatal(err)
		}
		if c["index"] != float64(i) || c["text"] != choice(one)["text"] {
			t.Errorf("choice %d %v, seed %d alone gives %q", i, c, 3+i, choice(one)["text"])
		}
		texts[c["text"].(string)] = true
	}
	if len(texts) < 2 {
		t.Errorf("the choices are all the same: %v", cs)
	}
	u := res["usage"].(map[string]any)
	if u["completion_tokens"] != 36.0 || u["total_tokens"] != u["prompt_tokens"].(float64)+36 {
		t.Errorf("usage %v", u)
	}
	chunks, _, err := collect(t, rn, context.Background(), fmt.Sprintf(body, 3, 2, `,"stream":true,"stream_options":{"include_usage":true}`), false)
	if err != nil {
		t.Fatal(err)
	}
	var got [2]strings.Builder
	finishes := 0
	for _, c := range chunks[:len(chunks)-1] {
		ch := choice(c)
		got[int(ch["index"].(float64))].WriteString(ch["text"].(string))
		if ch["finish_reason"] != nil {
			finishes++
		}
	}
	for i := range got {
		if got[i].String() != cs[i].(map[string]any)["text"] {
			t.Errorf("streamed choice %d %q, want %q", i, got[i].String(), cs[i].(map[string]any)["text"])
		}
	}
	if u := chunks[len(chunks)-1]["usage"].(map[string]any); finishes != 2 || u["completion_tokens"] != 24.0 {
		t.Errorf("%d finish chunks, usage %v", finishes, u)
	}
}
