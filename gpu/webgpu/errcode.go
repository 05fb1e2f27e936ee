package webgpu

import "wasmllm/errcode"

// The codes of the binding's errors: a lost device is device_lost, a limit
// or the device's memory exceeded model_too_large; the other GPU errors
// have none (internal).

func (e *DeviceLostError) ErrorCode() string { return errcode.DeviceLost }

func (e *DeviceLostError) ErrorDetails() map[string]any {
	return map[string]any{"reason": e.Reason, "message": e.Message}
}

func (e *LimitError) ErrorCode() string { return errcode.ModelTooLarge }

func (e *LimitError) ErrorDetails() map[string]any {
	return map[string]any{"limit": e.Limit, "need": e.Need, "have": e.Have, "object": e.Label}
}

// ErrorCode is model_too_large for an out-of-memory error, "" for the
// other kinds.
func (e *GPUError) ErrorCode() string {
	if e.Kind == "out-of-memory" {
		return errcode.ModelTooLarge
	}
	return ""
}

func (e *GPUError) ErrorMessage(whole error) string { return OutOfMemoryMessage(whole) }

// OutOfMemoryMessage is the message for people of an error whose cause is
// the device out of memory.
func OutOfMemoryMessage(whole error) string { return "the GPU ran out of memory: " + whole.Error() }
