package gpu

import (
	"fmt"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
)

// ErrNoWebGPU is the binding's webgpu.ErrNoWebGPU (the same value), which
// OpenBackend returns wrapped when the browser has no WebGPU or offers no
// adapter; callers that only open a backend match it without importing the
// binding.
var ErrNoWebGPU = webgpu.ErrNoWebGPU

// KVCacheError reports a KV cache that does not fit the device.
type KVCacheError struct {
	Layers, Capacity, KVHeads, HeadDim int
	DType                              loader.DType // F32 or F16
	// Limit names what was exceeded: "maxStorageBufferBindingSize" or
	// "maxBufferSize" (per buffer), or "out-of-memory" when the device
	// could not allocate the cache.
	Limit string
	// Need and Have are bytes: for a per-buffer limit, one layer's K (or V)
	// buffer and the limit; for out-of-memory, the whole cache and what was
	// allocated before the device refused (0 when it reported the failure
	// only once every buffer was created).
	Need, Have uint64
	Total      uint64 // bytes of the whole cache: a K and a V buffer per layer
	// MaxCapacity is the most positions one buffer of the limit holds.
	MaxCapacity int
	Err         error // the device's error, for out-of-memory
}

func (e *KVCacheError) Error() string {
	what := fmt.Sprintf("gpu: KV cache of %d layers × %d positions × %d kv heads × %d %s (%d bytes)",
		e.Layers, e.Capacity, e.KVHeads, e.HeadDim, e.DType, e.Total)
	if e.Limit == "out-of-memory" {
		if e.Have == 0 {
			return fmt.Sprintf("%s: the device could not allocate %d bytes: %v", what, e.Need, e.Err)
		}
		return fmt.Sprintf("%s: the device ran out of memory after %d of %d bytes: %v", what, e.Have, e.Need, e.Err)
	}
	return fmt.Sprintf("%s needs %d bytes per layer's K and V buffer; the device allows %d (%s), room for %d positions",
		what, e.Need, e.Have, e.Limit, e.MaxCapacity)
}

func (e *KVCacheError) Unwrap() error { return e.Err }

// KVShapeError reports a KV cache request the kernels cannot serve.
type KVShapeError struct {
	Layers, Capacity, KVHeads, HeadDim int
	DType                              loader.DType
	Reason                             string
}

func (e *KVShapeError) Error() string {
	return fmt.Sprintf("gpu: KV cache of %d layers × %d positions × %d kv heads × %d %s: %s",
		e.Layers, e.Capacity, e.KVHeads, e.HeadDim, e.DType, e.Reason)
}
