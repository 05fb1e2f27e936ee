package api

import (
	"errors"
	"strings"

	"wasmllm/grammar"
	"wasmllm/toolcall"
)

// classifyStructured gives the errors of structured output (the grammar
// front ends: GBNF, JSON Schema, regular expressions; a grammar that
// outgrew the matcher's bounds; tool calls) their code, bad_request, with what locates the fault in details; nil for any
// other error. The request field at fault is added by paramError where
// the front end does not name it (a toolcall.Error does).
func classifyStructured(err error) *Error {
	var (
		se *grammar.SyntaxError
		sc *grammar.SchemaError
		re *grammar.RegexError
		le *grammar.LimitError
		te *toolcall.Error
	)
	switch {
	case errors.As(err, &te):
		return &Error{Code: CodeBadRequest, Message: "request: " + te.Error(), Err: err, Details: map[string]any{"param": te.Param}}
	case errors.As(err, &sc):
		return &Error{Code: CodeBadRequest, Message: sc.Error(), Err: err, Details: map[string]any{"pointer": "#" + clipPointer(sc.Pointer), "keyword": clip(sc.Keyword)}}
	case errors.As(err, &re):
		return &Error{Code: CodeBadRequest, Message: re.Error(), Err: err, Details: map[string]any{"offset": re.Offset}}
	case errors.As(err, &se):
		return &Error{Code: CodeBadRequest, Message: se.Error(), Err: err, Details: map[string]any{"offset": se.Offset, "line": se.Line, "column": se.Col}}
	case errors.As(err, &le):
		return &Error{Code: CodeBadRequest, Message: le.Error(), Err: err}
	}
	return nil
}

// clipPointer is a JSON pointer for an error's details, each of its
// tokens (property names are the request's) clipped.
func clipPointer(ptr string) string {
	toks := strings.Split(ptr, "/")
	for i, t := range toks {
		toks[i] = clip(t)
	}
	return strings.Join(toks, "/")
}
