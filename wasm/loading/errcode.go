package loading

import "wasmllm/errcode"

// The codes of the package's errors. Their messages are their own, not
// those of any error wrapping them.

func (e *ModelError) ErrorCode() string             { return errcode.BadModel }
func (e *ModelError) ErrorMessage(error) string     { return e.Error() }
func (e *OptionError) ErrorCode() string            { return errcode.BadRequest }
func (e *OptionError) ErrorMessage(error) string    { return e.Error() }
func (e *ShardSizeError) ErrorCode() string         { return errcode.Integrity }
func (e *ShardSizeError) ErrorMessage(error) string { return e.Error() }

func (e *ShardSizeError) ErrorDetails() map[string]any { return map[string]any{"shard": e.File} }

func (e *TooLargeError) ErrorCode() string { return errcode.ModelTooLarge }

func (e *TooLargeError) ErrorMessage(error) string { return "model too large: " + e.Error() }

func (e *TooLargeError) ErrorDetails() map[string]any {
	return map[string]any{"what": e.What, "limit": e.Limit, "need": e.Need, "have": e.Have, "over": e.Need - e.Have}
}
