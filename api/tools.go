package api

import (
	"encoding/json"

	"wasmllm/sampler"
	"wasmllm/toolcall"
)

// Tools is a chat request's function calling: tools, tool_choice and
// parallel_tool_calls, as parsed. How a call is written depends on the
// model's chat template, so what it means for generation (a grammar that
// forces a call, the parser that reads calls out of the reply) is settled
// by Prepare.
type Tools struct {
	// Tools are the request's tools; nil without any.
	Tools []toolcall.Tool
	// Choice is tool_choice ("auto" with tools and "none" without when
	// left out); Choice.Single is parallel_tool_calls: false.
	Choice toolcall.Choice
}

// Forced reports whether the reply must be tool calls (tool_choice
// "required" or a named function).
func (t *Tools) Forced() bool {
	return t.Choice.Mode == toolcall.ChoiceRequired || t.Choice.Mode == toolcall.ChoiceFunction
}

// Enabled reports whether the model may call tools, so that its reply is
// read for calls.
func (t *Tools) Enabled() bool { return len(t.Tools) > 0 && t.Choice.Mode != toolcall.ChoiceNone }

// parseTools reads tools, tool_choice and parallel_tool_calls.
func parseTools(raw map[string]json.RawMessage) (Tools, error) {
	var t Tools
	var err error
	if v, ok := raw["tools"]; ok && !isNull(v) {
		if t.Tools, err = toolcall.ParseTools(v); err != nil {
			return t, Classify(err)
		}
	}
	if t.Choice, err = toolcall.ParseChoice(raw["tool_choice"], t.Tools); err != nil {
		return t, Classify(err)
	}
	if v, ok := raw["parallel_tool_calls"]; ok && !isNull(v) {
		parallel := true
		if err := decode(v, "parallel_tool_calls", &parallel); err != nil {
			return t, err
		}
		t.Choice.Single = !parallel
	}
	return t, nil
}

// ToolCalls reads the tool calls out of a finished reply in format f, as
// a chat.completion message holds them: the content outside the calls
// (nil when there is none, OpenAI's null) and the calls. A reply without
// calls gives its text unchanged and no calls. A reply that was cut short
// (see Cut) is read as its stream reports it (toolcall.ParseCut): a call
// cut inside its arguments is a call with the arguments so far, and the
// finish_reason tells the client it is incomplete.
func ToolCalls(f toolcall.Format, text string, cut bool) (*string, []ToolCall) {
	parse := toolcall.Parse
	if cut {
		parse = toolcall.ParseCut
	}
	content, calls, err := parse(f, text)
	if err != nil || len(calls) == 0 {
		return &text, nil
	}
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		out[i] = ToolCall{ID: c.ID, Type: "function", Function: ToolCallFunction{Name: c.Name, Arguments: c.Arguments}}
	}
	if content == "" {
		return nil, out
	}
	return &content, out
}

// Cut reports whether generation that ended with fin stopped the reply
// short of its own end: max_tokens, a stop string, a grammar dead end, or
// no reason at all (an abort). An end-of-turn token is the reply's own end.
func Cut(fin sampler.Finish) bool {
	return fin.Reason != sampler.FinishStop || fin.StopString != ""
}
