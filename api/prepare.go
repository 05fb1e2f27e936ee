package api

import (
	"context"

	"wasmllm/engine"
	"wasmllm/toolcall"
)

// Prepare readies r to run on eng: its constraint is compiled under ctx
// (CompileConstraint), and what depends on the model is settled: a
// chat's history is prepared for the model's template (assistant tool
// calls as its tool-call syntax expects them: toolcall.TemplateMessagesFor),
// the request's constraint becomes the engine request's grammar, and with
// tool_choice "required" or a named function the grammar is the one
// forcing the call in the model's syntax (a template that teaches none is
// refused, a bad_request naming tool_choice). With tools the model may
// call, and no constraint, the reply is read for tool calls in that
// syntax. A chat model's thinking block (Qwen3, DeepSeek-R1) is found
// from the rendered prompt, so that the reply's thinking is sent as
// reasoning_content, as vLLM's reasoning parsers do.
//
// Run calls it; a caller that assembles the prompt before Run (the
// server's precheck, once the request has the model's turn) calls it
// first. Its work is done once per request.
func Prepare(ctx context.Context, eng *engine.Engine, r *Request) error {
	if r.prepared {
		return nil
	}
	if err := r.CompileConstraint(ctx); err != nil {
		return err
	}
	f := toolcall.None
	if r.Kind == KindChat && eng != nil && eng.Tok != nil {
		f = toolcall.Detect(eng.Tok.ChatTemplate())
	}
	if r.Engine.Messages != nil {
		msgs, err := toolcall.TemplateMessagesFor(f, r.Engine.Messages)
		if err != nil {
			return Classify(err)
		}
		if f == toolcall.Phi4Mini && len(r.Engine.Chat.Tools) > 0 {
			// Phi-4-mini's template reads the tools from the system message
			if msgs, err = toolcall.PhiSystemTools(msgs, r.Engine.Chat.Tools); err != nil {
				return Classify(err)
			}
		}
		r.Engine.Messages = msgs
	}
	if r.Constraint != nil {
		r.Engine.Grammar = r.Constraint.Grammar
	}
	if r.Tools.Forced() {
		if f == toolcall.None {
			return badParam("tool_choice", "cannot force a tool call: the model's chat template teaches no tool-call syntax this engine knows (Hermes/Qwen, Llama 3 JSON, DeepSeek-R1, Phi-4-mini); use \"auto\" or \"none\"")
		}
		gbnf, err := toolcall.Grammar(f, r.Tools.Tools, r.Tools.Choice)
		if err != nil {
			return Classify(err)
		}
		g, err := CompileGrammar(gbnf)
		if err != nil {
			return paramError("tool_choice", err)
		}
		r.Engine.Grammar = g
	}
	if r.Tools.Enabled() && r.Constraint == nil {
		r.format = f
	}
	if r.Kind == KindChat && eng != nil {
		mode, err := eng.Reasoning(&r.Engine)
		if err != nil {
			return Classify(err)
		}
		r.reasoning = mode
	}
	r.prepared = true
	return nil
}

// Constrained reports whether generation is constrained by a grammar:
// a structured-output constraint or a forced tool call.
func (r *Request) Constrained() bool { return r.Constraint != nil || r.Tools.Forced() }

// constraintParam is the request field whose grammar constrains the
// reply, as errors about that grammar name it ("" for none).
func (r *Request) constraintParam() string {
	switch {
	case r.Constraint != nil:
		return r.Constraint.Param
	case r.Tools.Forced():
		return "tool_choice"
	}
	return ""
}

// ToolFormat is the tool-call syntax the reply is read in (Prepare sets
// it): toolcall.None when the reply is all content.
func (r *Request) ToolFormat() toolcall.Format { return r.format }
