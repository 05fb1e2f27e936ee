package gpu

import (
	"wasmllm/errcode"
	"wasmllm/gpu/webgpu"
)

// A KV cache that does not fit is model_too_large: over a per-buffer limit
// with the numbers and the context that would fit, out of the device's
// memory with the device's words.

func (e *KVCacheError) ErrorCode() string { return errcode.ModelTooLarge }

// ErrorDetails is nil for out-of-memory.
func (e *KVCacheError) ErrorDetails() map[string]any {
	if e.Limit == "out-of-memory" {
		return nil
	}
	return map[string]any{"what": "KV cache", "limit": e.Limit, "need": e.Need, "have": e.Have,
		"over": int64(e.Need) - int64(e.Have), "max_context": e.MaxCapacity}
}

func (e *KVCacheError) ErrorMessage(whole error) string {
	if e.Limit == "out-of-memory" {
		return webgpu.OutOfMemoryMessage(whole)
	}
	return whole.Error()
}
