package gpu

import (
	"errors"
	"fmt"
	"testing"

	"wasmllm/gpu/webgpu"
)

// TestErrNoWebGPU: the backend's ErrNoWebGPU is the binding's value, so
// either name matches what OpenBackend returns.
func TestErrNoWebGPU(t *testing.T) {
	err := fmt.Errorf("%w: requestAdapter returned no adapter", webgpu.ErrNoWebGPU)
	if !errors.Is(err, ErrNoWebGPU) {
		t.Errorf("errors.Is(%v, gpu.ErrNoWebGPU) = false", err)
	}
}

// TestKVCacheErrorUnwraps: an out-of-memory cache error keeps the device's
// error for errors.As.
func TestKVCacheErrorUnwraps(t *testing.T) {
	oom := &webgpu.GPUError{Kind: "out-of-memory", Message: "no memory"}
	err := fmt.Errorf("load: %w", &KVCacheError{Layers: 2, Capacity: 8, KVHeads: 1, HeadDim: 4, Limit: "out-of-memory", Need: 256, Err: oom})
	var ge *webgpu.GPUError
	if !errors.As(err, &ge) || ge != oom {
		t.Errorf("errors.As(%v, *webgpu.GPUError) did not find the device's error", err)
	}
	var kv *KVCacheError
	if !errors.As(err, &kv) || kv.Need != 256 {
		t.Errorf("errors.As(%v, *KVCacheError) failed", err)
	}
}
