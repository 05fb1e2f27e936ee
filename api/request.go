package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"wasmllm/engine"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
	"wasmllm/toolcall"
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
	// IncludeUsage is stream_options.include_usage: a stream ends with one
	// more chunk, with usage and no choices (OpenAI's and WebLLM's shape).
	// Without it a stream carries no usage.
	IncludeUsage bool
	// N is the number of choices (n), 1 to MaxChoices.
	N int
	// Constraint is the reply's structured-output constraint
	// (response_format, guided_*, structured_outputs), compiled; nil for
	// none.
	Constraint *Constraint
	// Tools is a chat's function calling (tools, tool_choice,
	// parallel_tool_calls).
	Tools Tools

	// Set by Prepare.
	prepared bool
	format   toolcall.Format // the model's tool-call syntax, when the reply is read for calls
	// reasoning is where the model's thinking block stands (chat): the
	// reply's thinking goes out as reasoning_content.
	reasoning engine.ReasoningMode
}

// MaxChoices bounds n.
const MaxChoices = 16

// Roles a chat message may have. "developer" (OpenAI's name for system
// instructions to newer models) is passed to the template as "system",
// which is the role chat templates know.
var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// Keys handled here rather than by sampler.ParseParams.
var (
	chatKeys       = append([]string{"messages", "stream", "logprobs", "top_logprobs", "chat_template_kwargs", "tools", "context_overflow", "model", "user", "n", "stream_options", "max_completion_tokens", "tool_choice", "parallel_tool_calls", "speculative"}, constraintKeys...)
	completionKeys = append([]string{"prompt", "stream", "logprobs", "echo", "context_overflow", "model", "user", "n", "stream_options", "suffix", "parse_special", "speculative"}, constraintKeys...)
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
			if r.Engine.Params.MaxTokens < 1 {
				return nil, badParam("max_completion_tokens", "must be at least 1")
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
	if r.Engine.Messages, err = parseMessages(m); err != nil {
		return nil, err
	}
	if v, ok := raw["logprobs"]; ok {
		if err := decode(v, "logprobs", &r.Logprobs); err != nil {
			return nil, err
		}
	}
	if v, ok := raw["top_logprobs"]; ok && !isNull(v) {
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
			if tokenizer.ReservedKwarg(k) {
				return nil, badParam("chat_template_kwargs."+k, "is set from the request itself and may not be replaced")
			}
			r.Engine.Chat.Kwargs[k] = x
		}
	}
	if err := r.ParseStructure(raw); err != nil {
		return nil, err
	}
	// Assistant tool calls in the history are checked now; they are
	// prepared for the model's template when it runs (see Prepare).
	if _, err := toolcall.TemplateMessages(r.Engine.Messages); err != nil {
		return nil, Classify(err)
	}
	return r, nil
}

// parseMessages decodes the messages array: every role one of chatRoles
// ("developer" becomes "system"), content a string, or an array of text
// parts ({type: "text", text}) joined with newlines as vLLM joins them for
// text-only models; content may be null or absent only on assistant
// messages (which may carry tool_calls instead).
func parseMessages(data json.RawMessage) ([]tokenizer.Message, error) {
	var raws []json.RawMessage
	if err := decode(data, "messages", &raws); err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, badParam("messages", "must not be empty")
	}
	msgs := make([]tokenizer.Message, len(raws))
	for i, raw := range raws {
		param := fmt.Sprintf("messages[%d]", i)
		obj := raw
		content, has, err := messageContent(raw)
		if err != nil {
			return nil, badParam(param, "must be an object")
		}
		if has {
			text, isParts, err := flattenContent(content, param+".content")
			if err != nil {
				return nil, err
			}
			if isParts {
				obj = replaceContent(obj, text)
			}
		}
		if err := decode(obj, param, &msgs[i]); err != nil {
			return nil, err
		}
		m := &msgs[i]
		switch {
		case m.Role == "":
			return nil, badParam(param+".role", "is required")
		case !chatRoles[m.Role]:
			return nil, badParam(param+".role", fmt.Sprintf(`%q is not a chat role: want "system", "developer", "user", "assistant" or "tool"`, clip(m.Role)))
		}
		if m.Role == "developer" {
			m.Role = "system"
		}
		if m.Role != "assistant" && (!has || isNull(content)) {
			return nil, badParam(param+".content", "is required")
		}
	}
	return msgs, nil
}

// messageContent checks that raw is a JSON object and returns the value
// of its "content" key, if it has one.
func messageContent(raw json.RawMessage) (content json.RawMessage, has bool, err error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, false, fmt.Errorf("not an object")
	}
	content, has = fields["content"]
	return content, has, nil
}

// flattenContent reads a message's content: a string or null as it is
// (isParts false), or an array of text parts, returned joined.
func flattenContent(v json.RawMessage, param string) (text string, isParts bool, err error) {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || t[0] == '"' || isNull(t) {
		return "", false, nil
	}
	if t[0] != '[' {
		return "", false, badParam(param, "must be a string or an array of content parts")
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(t, &parts); err != nil {
		return "", false, badParam(param, "must be a string or an array of content parts")
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		var typ string
		if err := json.Unmarshal(p["type"], &typ); err != nil || typ == "" {
			return "", false, badParam(pp+".type", "is required")
		}
		if typ != "text" {
			return "", false, badParam(pp+".type", fmt.Sprintf("%q is not supported: the model reads text parts only", clip(typ)))
		}
		var s string
		if err := json.Unmarshal(p["text"], &s); err != nil {
			return "", false, badParam(pp+".text", "must be a string")
		}
		texts = append(texts, s)
	}
	return strings.Join(texts, "\n"), true, nil
}

// replaceContent returns the object obj with its content value replaced by
// the string text, keeping the keys in their order (templates may iterate
// over a message's keys).
func replaceContent(obj json.RawMessage, text string) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.Token() // {
	var b bytes.Buffer
	b.WriteByte('{')
	for n := 0; dec.More(); n++ {
		kt, _ := dec.Token()
		k, _ := kt.(string)
		var v json.RawMessage
		dec.Decode(&v)
		if n > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		if k == "content" {
			v, _ = json.Marshal(text)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
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
	// parse_special (llama.cpp's name; default true): false reads special
	// tokens written in a text prompt ("<s>") as text, as SentencePiece does.
	if v, ok := raw["parse_special"]; ok && !isNull(v) {
		var parse bool
		if err := decode(v, "parse_special", &parse); err != nil {
			return nil, err
		}
		r.Engine.SpecialAsText = !parse
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
	if err := r.ParseStructure(raw); err != nil {
		return nil, err
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
	r.N = 1
	if v, ok := raw["n"]; ok && !isNull(v) {
		if err := decode(v, "n", &r.N); err != nil {
			return err
		}
		if r.N < 1 || r.N > MaxChoices {
			return badParam("n", fmt.Sprintf("must be in [1, %d]", MaxChoices))
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
	if v, ok := raw["fit_max_tokens"]; ok && !isNull(v) {
		if err := decode(v, "fit_max_tokens", &r.Engine.FitGrammar); err != nil {
			return err
		}
	}
	if v, ok := raw["speculative"]; ok && !isNull(v) {
		var sp engine.Speculative
		if err := decode(v, "speculative", &sp); err != nil {
			return err
		}
		r.Engine.Speculative = &sp
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
	if v, ok := raw["max_tokens"]; ok && !isNull(v) && r.Engine.Params.MaxTokens < 1 {
		// OpenAI's lower bound: 0 is not "no limit" (leave max_tokens out
		// for that in a chat).
		return badParam("max_tokens", "must be at least 1")
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
