package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"wasmllm/engine"
	"wasmllm/sampler"
)

// Kinds of request.
const (
	KindChat       = "chat"       // chat.completions.create
	KindCompletion = "completion" // completions.create
)

// Request is a parsed chat.completions or completions request.
type Request struct {
	Kind   string
	Engine engine.Request
	Stream bool
	// Logprobs asks for each token's logprob; TopLogprobs for that many
	// alternatives (Engine.Params.Logprobs carries the count).
	Logprobs    bool
	TopLogprobs int
	// IncludeUsage is stream_options.include_usage; usage is sent on the
	// final chunk either way.
	IncludeUsage bool
}

// Keys handled here rather than by sampler.ParseParams.
var (
	chatKeys       = []string{"messages", "stream", "logprobs", "top_logprobs", "chat_template_kwargs", "tools", "context_overflow", "model", "user", "n", "stream_options", "max_completion_tokens"}
	completionKeys = []string{"prompt", "stream", "logprobs", "echo", "context_overflow", "model", "user", "n", "stream_options", "suffix"}
)

// ParseChat parses a chat.completions.create request body.
func ParseChat(data []byte) (*Request, error) {
	raw, params, err := split(data, chatKeys)
	if err != nil {
		return nil, err
	}
	r := &Request{Kind: KindChat}
	if err := common(r, raw, params); err != nil {
		return nil, err
	}
	if v, ok := raw["max_tokens"]; !ok || isNull(v) {
		if v, ok := raw["max_completion_tokens"]; ok && !isNull(v) {
			if err := decode(v, "max_completion_tokens", &r.Engine.Params.MaxTokens); err != nil {
				return nil, err
			}
		} else {
			// A chat turn runs until it stops or the context is full.
			r.Engine.Params.MaxTokens = 0
		}
	}
	m, ok := raw["messages"]
	if !ok {
		return nil, badParam("messages", "is required")
	}
	if err := decode(m, "messages", &r.Engine.Messages); err != nil {
		return nil, err
	}
	if len(r.Engine.Messages) == 0 {
		return nil, badParam("messages", "must not be empty")
	}
	for i, msg := range r.Engine.Messages {
		if msg.Role == "" {
			return nil, badParam(fmt.Sprintf("messages[%d].role", i), "is required")
		}
	}
	if v, ok := raw["logprobs"]; ok {
		if err := decode(v, "logprobs", &r.Logprobs); err != nil {
			return nil, err
		}
	}
	if v, ok := raw["top_logprobs"]; ok {
		if err := decode(v, "top_logprobs", &r.TopLogprobs); err != nil {
			return nil, err
		}
		if !r.Logprobs {
			return nil, badParam("top_logprobs", "needs logprobs: true")
		}
	}
	if r.Logprobs {
		if r.TopLogprobs < 0 || r.TopLogprobs > sampler.MaxLogprobs {
			return nil, badParam("top_logprobs", fmt.Sprintf("must be in [0, %d]", sampler.MaxLogprobs))
		}
		n := r.TopLogprobs
		r.Engine.Params.Logprobs = &n
	}
	if v, ok := raw["chat_template_kwargs"]; ok && !isNull(v) {
		var kw map[string]json.RawMessage
		if err := decode(v, "chat_template_kwargs", &kw); err != nil {
			return nil, err
		}
		r.Engine.Chat.Kwargs = make(map[string]any, len(kw))
		for k, x := range kw {
			r.Engine.Chat.Kwargs[k] = x
		}
	}
	if v, ok := raw["tools"]; ok && !isNull(v) {
		if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '[' {
			return nil, badParam("tools", "must be an array")
		}
		r.Engine.Chat.Tools = v
	}
	return r, nil
}

// ParseCompletion parses a completions.create request body: prompt is a
// string or an array of token ids.
func ParseCompletion(data []byte) (*Request, error) {
	raw, params, err := split(data, completionKeys)
	if err != nil {
		return nil, err
	}
	r := &Request{Kind: KindCompletion}
	if err := common(r, raw, params); err != nil {
		return nil, err
	}
	p, ok := raw["prompt"]
	if !ok {
		return nil, badParam("prompt", "is required")
	}
	switch t := bytes.TrimSpace(p); {
	case len(t) > 0 && t[0] == '"':
		if err := decode(p, "prompt", &r.Engine.Prompt); err != nil {
			return nil, err
		}
		if r.Engine.Prompt == "" {
			return nil, badParam("prompt", "must not be empty")
		}
	case len(t) > 0 && t[0] == '[':
		if err := decode(p, "prompt", &r.Engine.Tokens); err != nil {
			return nil, badParam("prompt", "must be a string or an array of token ids")
		}
		if len(r.Engine.Tokens) == 0 {
			return nil, badParam("prompt", "must not be empty")
		}
	default:
		return nil, badParam("prompt", "must be a string or an array of token ids")
	}
	if v, ok := raw["logprobs"]; ok && !isNull(v) {
		var n int
		if err := decode(v, "logprobs", &n); err != nil {
			return nil, err
		}
		if n < 0 || n > sampler.MaxLogprobs {
			return nil, badParam("logprobs", fmt.Sprintf("must be in [0, %d]", sampler.MaxLogprobs))
		}
		r.Logprobs, r.TopLogprobs = true, n
		r.Engine.Params.Logprobs = &n
	}
	if v, ok := raw["echo"]; ok {
		var echo bool
		if err := decode(v, "echo", &echo); err != nil {
			return nil, err
		}
		if echo {
			return nil, badParam("echo", "is not supported")
		}
	}
	if v, ok := raw["suffix"]; ok && !isNull(v) {
		return nil, badParam("suffix", "is not supported")
	}
	return r, nil
}

// split separates a request object into the API-level keys and a JSON
// object of the remaining (sampling) keys.
func split(data []byte, keys []string) (map[string]json.RawMessage, []byte, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, nil, &Error{Code: CodeBadRequest, Message: "request: " + err.Error(), Err: err}
	}
	if all == nil {
		return nil, nil, Errorf(CodeBadRequest, "request: want a JSON object")
	}
	raw := map[string]json.RawMessage{}
	for _, k := range keys {
		if v, ok := all[k]; ok {
			raw[k] = v
			delete(all, k)
		}
	}
	if v, ok := all["max_tokens"]; ok {
		raw["max_tokens"] = v
		if isNull(v) {
			delete(all, "max_tokens")
		}
	}
	for k, v := range all {
		if isNull(v) {
			delete(all, k) // OpenAI clients send null for "unset"
		}
	}
	params, err := json.Marshal(all)
	if err != nil {
		return nil, nil, &Error{Code: CodeBadRequest, Message: "request: " + err.Error(), Err: err}
	}
	return raw, params, nil
}

// common parses the keys both kinds share and the sampling parameters.
func common(r *Request, raw map[string]json.RawMessage, params []byte) error {
	p, err := sampler.ParseParams(params)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "sampler: parameters: ")
		return &Error{Code: CodeBadRequest, Message: "request: " + msg, Err: err}
	}
	r.Engine.Params = p
	if v, ok := raw["stream"]; ok && !isNull(v) {
		if err := decode(v, "stream", &r.Stream); err != nil {
			return err
		}
	}
	if v, ok := raw["n"]; ok && !isNull(v) {
		var n int
		if err := decode(v, "n", &n); err != nil {
			return err
		}
		if n != 1 {
			return badParam("n", "only n = 1 is supported")
		}
	}
	if v, ok := raw["stream_options"]; ok && !isNull(v) {
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := decode(v, "stream_options", &so); err != nil {
			return err
		}
		r.IncludeUsage = so.IncludeUsage
	}
	r.Engine.Overflow = engine.OverflowError
	if v, ok := raw["context_overflow"]; ok && !isNull(v) {
		var s string
		if err := decode(v, "context_overflow", &s); err != nil {
			return err
		}
		switch s {
		case engine.OverflowError, engine.OverflowTruncate:
			r.Engine.Overflow = s
		default:
			return badParam("context_overflow", `must be "error" or "truncate"`)
		}
	}
	if r.Engine.Params.MaxTokens < 0 {
		return badParam("max_tokens", "must not be negative")
	}
	return nil
}

func decode(v json.RawMessage, param string, dst any) error {
	if err := json.Unmarshal(v, dst); err != nil {
		return &Error{Code: CodeBadRequest, Message: fmt.Sprintf("request: %s: %v", param, err), Details: map[string]any{"param": param}, Err: err}
	}
	return nil
}

func badParam(param, what string) *Error {
	return &Error{Code: CodeBadRequest, Message: fmt.Sprintf("request: %s %s", param, what), Details: map[string]any{"param": param}}
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }
