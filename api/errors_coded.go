package api

import (
	"errors"

	"wasmllm/errcode"
)

// classifyCoded gives an error that carries its code (the first
// errcode.Coded in its tree) that code, with the error's details and
// wording where it has them; nil when there is none, or it has no code.
func classifyCoded(err error) *Error {
	var c errcode.Coded
	if !errors.As(err, &c) || c.ErrorCode() == "" {
		return nil
	}
	out := &Error{Code: c.ErrorCode(), Message: err.Error(), Err: err}
	if w, ok := c.(errcode.Worded); ok {
		out.Message = w.ErrorMessage(err)
	}
	if d, ok := c.(errcode.Detailed); ok {
		out.Details = d.ErrorDetails()
	}
	return out
}
