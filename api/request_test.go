package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"wasmllm/engine"
)

func TestParseChat(t *testing.T) {
	r, err := ParseChat([]byte(`{"model":"x","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi","name":"bob"}],
		"stream":true,"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,"seed":7,"repetition_penalty":1.1,
		"frequency_penalty":0.2,"presence_penalty":0.3,"logit_bias":{"5":-100},"max_tokens":12,"stop":"\n",
		"logprobs":true,"top_logprobs":3,"chat_template_kwargs":{"enable_thinking":false},"context_overflow":"truncate",
		"stream_options":{"include_usage":true},"user":null,"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	p := r.Engine.Params
	if !r.Stream || !r.IncludeUsage || r.Kind != KindChat {
		t.Errorf("stream %v include_usage %v kind %q", r.Stream, r.IncludeUsage, r.Kind)
	}
	if p.Temperature != 0.5 || p.TopP != 0.9 || p.TopK != 40 || p.MinP != 0.05 || p.Seed == nil || *p.Seed != 7 ||
		p.RepetitionPenalty != 1.1 || p.FrequencyPenalty != 0.2 || p.PresencePenalty != 0.3 || p.LogitBias[5] != -100 ||
		p.MaxTokens != 12 || len(p.Stop) != 1 || p.Stop[0] != "\n" {
		t.Errorf("params %+v", p)
	}
	if p.Logprobs == nil || *p.Logprobs != 3 || !r.Logprobs || r.TopLogprobs != 3 {
		t.Errorf("logprobs %v top %d", p.Logprobs, r.TopLogprobs)
	}
	if len(r.Engine.Messages) != 2 || r.Engine.Messages[1].Content != "hi" || r.Engine.Messages[1].Role != "user" {
		t.Errorf("messages %+v", r.Engine.Messages)
	}
	if kw, ok := r.Engine.Chat.Kwargs["enable_thinking"].(json.RawMessage); !ok || string(kw) != "false" {
		t.Errorf("kwargs %#v", r.Engine.Chat.Kwargs)
	}
	if r.Engine.Overflow != engine.OverflowTruncate {
		t.Errorf("overflow %q", r.Engine.Overflow)
	}
}

func TestParseDefaults(t *testing.T) {
	r, err := ParseChat([]byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// A chat runs until it stops (or fills the context); no logprobs.
	if r.Engine.Params.MaxTokens != 0 || r.Engine.Params.Logprobs != nil || r.Stream || r.Engine.Overflow != engine.OverflowError {
		t.Errorf("defaults: %+v stream %v overflow %q", r.Engine.Params, r.Stream, r.Engine.Overflow)
	}
	if r.Engine.Params.Temperature != 1 || r.Engine.Params.TopP != 1 {
		t.Errorf("sampler defaults: %+v", r.Engine.Params)
	}
	r, err = ParseChat([]byte(`{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":5,"max_tokens":null}`))
	if err != nil || r.Engine.Params.MaxTokens != 5 {
		t.Errorf("max_completion_tokens: %v %+v", err, r)
	}
	c, err := ParseCompletion([]byte(`{"prompt":"Once"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine.Params.MaxTokens != 16 || c.Engine.Prompt != "Once" || c.Kind != KindCompletion {
		t.Errorf("completion defaults %+v", c)
	}
	if c.Engine.SpecialAsText {
		t.Error("parse_special defaults to true")
	}
	if c, err = ParseCompletion([]byte(`{"prompt":"Once <s>","parse_special":false}`)); err != nil || !c.Engine.SpecialAsText {
		t.Errorf("parse_special false: %v %+v", err, c)
	}
	if _, err = ParseCompletion([]byte(`{"prompt":"Once","parse_special":"no"}`)); err == nil || !strings.Contains(err.Error(), "parse_special") {
		t.Errorf("parse_special \"no\": %v", err)
	}
	c, err = ParseCompletion([]byte(`{"prompt":[1,403,407],"logprobs":2,"max_tokens":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Engine.Tokens) != 3 || c.Engine.Tokens[1] != 403 || c.Engine.Params.Logprobs == nil || *c.Engine.Params.Logprobs != 2 {
		t.Errorf("token prompt %+v", c.Engine)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		chat  bool
		body  string
		param string
	}{
		{true, `{}`, "messages"},
		{true, `{"messages":[]}`, "messages"},
		{true, `{"messages":[{"content":"x"}]}`, "messages[0].role"},
		{true, `{"messages":[{"role":"user","content":"x"}],"top_logprobs":2}`, "top_logprobs"},
		{true, `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21}`, "top_logprobs"},
		{true, `{"messages":[{"role":"user","content":"x"}],"n":0}`, "n"},
		{true, `{"messages":[{"role":"user","content":"x"}],"n":17}`, "n"},
		{true, `{"messages":[{"role":"user","content":"x"}],"context_overflow":"drop"}`, "context_overflow"},
		{true, `{"messages":[{"role":"user","content":"x"}],"tools":{}}`, "tools"},
		{true, `{"messages":"hi"}`, "messages"},
		{true, `{"messages":[{"role":"user","content":"x"}],"stream":"yes"}`, "stream"},
		{true, `{"messages":[{"role":"user","content":"x"}],"temprature":1}`, ""},
		{true, `{"messages":[{"role":"user","content":"x"}],"max_tokens":-1}`, "max_tokens"},
		{true, `[1]`, ""},
		{true, `nul`, ""},
		{false, `{}`, "prompt"},
		{false, `{"prompt":""}`, "prompt"},
		{false, `{"prompt":[]}`, "prompt"},
		{false, `{"prompt":["a","b"]}`, "prompt"},
		{false, `{"prompt":3}`, "prompt"},
		{false, `{"prompt":"x","echo":true}`, "echo"},
		{false, `{"prompt":"x","logprobs":true}`, "logprobs"},
		{false, `{"prompt":"x","logprobs":30}`, "logprobs"},
	} {
		var err error
		if tc.chat {
			_, err = ParseChat([]byte(tc.body))
		} else {
			_, err = ParseCompletion([]byte(tc.body))
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest {
			t.Errorf("%s: error %v, want a bad_request", tc.body, err)
			continue
		}
		if tc.param != "" && e.Details["param"] != tc.param {
			t.Errorf("%s: param %v, want %q (%v)", tc.body, e.Details["param"], tc.param, e)
		}
	}
}
