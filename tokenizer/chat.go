package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"wasmllm/tokenizer/internal/jinja"
)

// ChatOptions are the variables a chat template sees besides messages.
type ChatOptions struct {
	// AddGenerationPrompt asks the template to open the assistant's turn.
	AddGenerationPrompt bool
	// Tools is a JSON array of tool definitions, or nil for none.
	Tools json.RawMessage
	// Kwargs are extra template variables such as Qwen3's enable_thinking.
	// Values may be json.RawMessage (decoded keeping key order), a
	// jinja.Value, or plain Go values (bool, string, numbers, nil, []any,
	// map[string]any). They override the variables above, as in Hugging
	// Face's apply_chat_template(**kwargs).
	Kwargs map[string]any
	// Now is the clock of strftime_now; nil means time.Now.
	Now func() time.Time
}

// chatLimits bound compiling and rendering a chat template, which comes
// with the model and may be hostile: the engine's defaults (16 MiB of
// output and per value, 64 MiB allocated in all, 10M steps, range() of
// 100k items, nesting depth 200, 5 s) are far above what real templates
// need, and stop a runaway template within about a second. Past one, the
// render fails with a *TemplateError naming the limit.
var chatLimits = jinja.DefaultLimits()

// RenderChat renders a Jinja chat template with messages, the way Hugging
// Face's apply_chat_template does (tokenize=False). The template sees
// messages, tools (none unless set), add_generation_prompt, the Kwargs,
// raise_exception and strftime_now. Set bos_token and eos_token through
// Kwargs, or use (*Tokenizer).RenderChat which does.
func RenderChat(tmpl string, messages []Message, opts ChatOptions) (string, error) {
	return renderChat(tmpl, "", messages, opts)
}

// renderChat is RenderChat for a template whose source (for errors) is
// name.
func renderChat(tmpl, name string, messages []Message, opts ChatOptions) (out string, err error) {
	if tmpl == "" {
		return "", ErrNoChatTemplate
	}
	// The template comes from the model file: a panic in the engine on a
	// strange template is reported as an error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			out, err = "", &TemplateError{Stage: "render", Template: name, Err: fmt.Errorf("template engine panic: %v", r)}
		}
	}()
	t, err := jinja.CompileLimits(normalizeTemplate(tmpl), chatLimits)
	if err != nil {
		return "", templateError("compile", name, err)
	}
	vars := map[string]jinja.Value{
		"add_generation_prompt": jinja.NewBool(opts.AddGenerationPrompt),
		"tools":                 jinja.None(),
		"documents":             jinja.None(),
		"strftime_now":          strftimeNow(opts.Now),
	}
	msgs := make([]jinja.Value, len(messages))
	for i := range messages {
		if msgs[i], err = messages[i].value(); err != nil {
			return "", fmt.Errorf("message %d: %w", i, err)
		}
	}
	vars["messages"] = jinja.NewList(msgs)
	if opts.Tools != nil {
		v, err := jsonValue(opts.Tools)
		if err != nil {
			return "", fmt.Errorf("tools: %w", err)
		}
		vars["tools"] = v
	}
	for k, x := range opts.Kwargs {
		v, err := kwargValue(x)
		if err != nil {
			return "", fmt.Errorf("kwarg %s: %w", k, err)
		}
		vars[k] = v
	}
	if out, err = t.RenderValuesLimits(vars, chatLimits); err != nil {
		return "", templateError("render", name, err)
	}
	return out, nil
}

// ReservedKwarg reports whether name is a variable the renderer fills from
// the conversation itself (messages, tools, documents), which
// chat_template_kwargs may not replace: Hugging Face's apply_chat_template
// refuses a keyword given twice, and a replaced messages or tools would
// skip the request's validation. The request's parser refuses them
// (internal callers may pass tools this way).
func ReservedKwarg(name string) bool {
	switch name {
	case "messages", "tools", "documents":
		return true
	}
	return false
}

// templateError wraps a compile or render failure, naming the limit the
// template hit if that was the cause.
func templateError(stage, name string, err error) *TemplateError {
	te := &TemplateError{Stage: stage, Template: name, Err: err}
	var le *jinja.LimitError
	if errors.As(err, &le) {
		te.Limit = le.Limit
	}
	return te
}

func kwargValue(x any) (jinja.Value, error) {
	switch v := x.(type) {
	case json.RawMessage:
		return jsonValue(v)
	case jinja.Value:
		return v, nil
	case int32:
		return jinja.NewInt(int64(v)), nil
	case float32:
		return jinja.NewFloat(float64(v)), nil
	}
	v := jinja.FromGoValue(x)
	if v.IsUndefined() {
		return v, fmt.Errorf("unsupported type %T", x)
	}
	return v, nil
}

// RenderChat renders the model's chat template with bos_token and
// eos_token set from the tokenizer. It returns ErrNoChatTemplate if the
// model has none.
func (t *Tokenizer) RenderChat(messages []Message, opts ChatOptions) (string, error) {
	if t.chatTemplate == "" {
		return "", ErrNoChatTemplate
	}
	kw := make(map[string]any, len(opts.Kwargs)+2)
	if t.hasBOSToken {
		kw["bos_token"] = t.bosToken
	}
	if t.hasEOSToken {
		kw["eos_token"] = t.eosToken
	}
	for k, v := range opts.Kwargs {
		kw[k] = v
	}
	opts.Kwargs = kw
	return renderChat(t.chatTemplate, t.chatTemplateFrom, messages, opts)
}
