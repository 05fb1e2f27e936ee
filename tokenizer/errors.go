package tokenizer

import (
	"errors"
	"fmt"

	"wasmllm/loader"
)

// Sentinel errors. Malformed files are reported as *loader.FormatError
// naming the file, the field and, where known, the byte offset.
var (
	// ErrUnsupported marks a tokenizer component this package does not
	// implement, such as a WordPiece model or an unknown GGUF pre-tokenizer.
	ErrUnsupported = errors.New("unsupported tokenizer feature")
	// ErrNoChatTemplate is returned when rendering a chat for a model that
	// declares no chat template.
	ErrNoChatTemplate = errors.New("model has no chat template")
)

// TemplateError reports a chat template that failed to compile or render,
// including a raise_exception call from the template itself and a template
// stopped by one of the engine's limits (see chatLimits).
type TemplateError struct {
	Stage string // "compile" or "render"
	// Template says where the template came from, such as
	// "tokenizer_config.json chat_template" or "tokenizer.chat_template
	// (GGUF)"; it is empty for a template handed to RenderChat.
	Template string
	// Limit names the limit the template exceeded, such as "max_steps"
	// or "max_depth" (a *jinja.LimitError's Limit, which Err wraps); it is
	// empty for other failures.
	Limit string
	Err   error
}

func (e *TemplateError) Error() string {
	if e.Template != "" {
		return fmt.Sprintf("chat template (%s) %s: %v", e.Template, e.Stage, e.Err)
	}
	return fmt.Sprintf("chat template %s: %v", e.Stage, e.Err)
}

func (e *TemplateError) Unwrap() error { return e.Err }

func formatErr(file, field string, err error) error {
	return &loader.FormatError{File: file, Field: field, Offset: -1, Err: err}
}

func formatErrf(file, field, format string, args ...any) error {
	return formatErr(file, field, fmt.Errorf(format, args...))
}

type formatError = loader.FormatError
