package api

import (
	"errors"
	"fmt"
	"testing"

	"wasmllm/cpu"
	"wasmllm/gpu"
	"wasmllm/gpu/webgpu"
)

// A device loss, however deeply wrapped, is code device_lost with the
// loss's reason and message in the details.
func TestClassifyDeviceLost(t *testing.T) {
	lost := &webgpu.DeviceLostError{Reason: "unknown", Message: "A valid external Instance reference no longer exists."}
	err := fmt.Errorf("decode step 3: %w", fmt.Errorf("gpu backend: %w", lost))
	e := Classify(err)
	if e.Code != CodeDeviceLost || e.Details["reason"] != "unknown" || e.Details["message"] != lost.Message {
		t.Errorf("Classify = %+v", e)
	}
	if e.Message != err.Error() || !errors.Is(e, lost) {
		t.Errorf("message %q, unwraps to the loss: %v", e.Message, errors.Is(e, lost))
	}
}

// TestClassifyKVCache: a KV cache over a device limit is model_too_large
// with the numbers, and so is a device out of memory.
func TestClassifyKVCache(t *testing.T) {
	kv := &gpu.KVCacheError{Layers: 2, Capacity: 4096, KVHeads: 8, HeadDim: 128, Limit: "maxBufferSize", Need: 1 << 30, Have: 1 << 28, MaxCapacity: 1024}
	e := Classify(fmt.Errorf("load: %w", kv))
	if e.Code != CodeModelTooLarge || e.Details["max_context"] != 1024 || e.Details["limit"] != "maxBufferSize" {
		t.Errorf("over a limit: %+v", e)
	}
	oom := &webgpu.GPUError{Kind: "out-of-memory", Message: "no memory"}
	if e := Classify(fmt.Errorf("upload: %w", oom)); e.Code != CodeModelTooLarge {
		t.Errorf("out of memory: %+v", e)
	}
}

// A CPU rank's failure, wrapped, is code cpu_rank_failed with the rank, the
// op and the reason in the details.
func TestClassifyRankFailed(t *testing.T) {
	re := &cpu.RankError{Rank: 2, Op: "matmul", Reason: "the worker's engine instance died"}
	e := Classify(fmt.Errorf("decode step 3: %w", re))
	if e.Code != CodeRankFailed || e.Details["rank"] != 2 || e.Details["op"] != "matmul" || e.Details["reason"] != re.Reason || !errors.Is(e, re) {
		t.Errorf("Classify = %+v", e)
	}
}
