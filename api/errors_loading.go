package api

import (
	"errors"

	"wasmllm/wasm/loading"
)

// classifyLoading gives the errors of package loading their codes; nil for
// any other error.
func classifyLoading(err error) *Error {
	var (
		tl *loading.TooLargeError
		ss *loading.ShardSizeError
		me *loading.ModelError
		oe *loading.OptionError
	)
	switch {
	case errors.As(err, &tl):
		return &Error{Code: CodeModelTooLarge, Message: "model too large: " + tl.Error(), Err: err,
			Details: map[string]any{"what": tl.What, "limit": tl.Limit, "need": tl.Need, "have": tl.Have, "over": tl.Need - tl.Have}}
	case errors.As(err, &ss):
		return &Error{Code: CodeIntegrity, Message: ss.Error(), Err: err, Details: map[string]any{"shard": ss.File}}
	case errors.As(err, &me):
		return &Error{Code: CodeBadModel, Message: me.Error(), Err: err}
	case errors.As(err, &oe):
		return &Error{Code: CodeBadRequest, Message: oe.Error(), Err: err}
	}
	return nil
}
