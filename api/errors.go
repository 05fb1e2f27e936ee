package api

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"wasmllm/engine"
	"wasmllm/errcode"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
)

// Error codes carried by *Error across the worker boundary, as package
// errcode names them. The JavaScript API exposes them as WasmLLMError.code.
const (
	CodeBadRequest      = errcode.BadRequest
	CodeBadModel        = errcode.BadModel
	CodeModelTooLarge   = errcode.ModelTooLarge
	CodeQuotaExceeded   = errcode.QuotaExceeded
	CodeIntegrity       = errcode.Integrity
	CodeNetwork         = errcode.Network
	CodeContextOverflow = errcode.ContextOverflow
	CodeAborted         = errcode.Aborted
	CodeNoChatTemplate  = errcode.NoChatTemplate
	CodeNoTokenizer     = errcode.NoTokenizer
	CodeDeviceLost      = errcode.DeviceLost
	CodeRankFailed      = errcode.RankFailed
	CodeNoWebGPU        = errcode.NoWebGPU
	CodeNotLoaded       = errcode.NotLoaded
	CodeInternal        = errcode.Internal
)

// Error is an error with a stable code, a message for people, and details
// for programs. It is what the worker posts to the page.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	Err     error          `json:"-"`
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// maxEcho bounds the bytes of a request's value that an error repeats.
const maxEcho = 64

// clip is s cut to its first maxEcho bytes (at a character boundary),
// with "..." when it was longer: an error names what it refuses without
// echoing all of it.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	n := maxEcho
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// Errorf returns an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Classify maps any error from loading or generation to an *Error with the
// most specific code that applies: an error that carries its code
// (errcode.Coded: the backends' and the model loader's) has it, the
// others are mapped here.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if e := classifyCoded(err); e != nil {
		return e
	}
	if e := classifyStructured(err); e != nil {
		return e
	}
	out := &Error{Code: CodeInternal, Message: err.Error(), Err: err}
	var (
		ce  *engine.ContextError
		mce *model.ContextError
		pe  *sampler.ParamError
		te  *tokenizer.TemplateError
		fe  *loader.FormatError
	)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		out.Code = CodeAborted
	case errors.As(err, &ce):
		out.Code = CodeContextOverflow
		out.Details = map[string]any{"prompt_tokens": ce.PromptTokens, "max_tokens": ce.MaxTokens, "context_length": ce.Context}
	case errors.As(err, &mce):
		out.Code = CodeContextOverflow
		out.Details = map[string]any{"position": mce.Pos, "tokens": mce.Tokens, "context_length": mce.Capacity}
	case errors.Is(err, model.ErrContextFull):
		out.Code = CodeContextOverflow
	case errors.As(err, &pe):
		out.Code = CodeBadRequest
		out.Details = map[string]any{"param": pe.Param}
	case errors.Is(err, tokenizer.ErrNoChatTemplate):
		out.Code = CodeNoChatTemplate
	case errors.Is(err, engine.ErrNoTokenizer):
		out.Code = CodeNoTokenizer
	case errors.As(err, &te):
		// A template's raise_exception rejects the conversation itself; a
		// template that does not compile or runs past a limit is the
		// model's fault.
		out.Code = CodeBadRequest
		if te.Stage == "compile" || te.Limit != "" {
			out.Code = CodeBadModel
		}
		out.Details = map[string]any{"stage": te.Stage, "template": te.Template, "limit": te.Limit}
	case errors.Is(err, sampler.ErrAllMasked):
		out.Code = CodeBadRequest
	case errors.Is(err, manifest.ErrChecksum):
		out.Code = CodeIntegrity
	case errors.As(err, &fe):
		out.Code = CodeBadModel
		out.Details = map[string]any{"file": fe.File, "field": fe.Field, "offset": fe.Offset}
	}
	return out
}
