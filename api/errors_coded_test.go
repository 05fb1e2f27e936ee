package api

import (
	"errors"
	"fmt"
	"go/build"
	"reflect"
	"slices"
	"testing"

	"wasmllm/gpu"
	"wasmllm/gpu/webgpu"
	"wasmllm/wasm/loading"
)

// TestClassifyCoded: the errors that carry their code (errcode.Coded) get
// it, their details and their wording, wrapped or not; a GPU error of a
// kind without a code is internal.
func TestClassifyCoded(t *testing.T) {
	tl := &loading.TooLargeError{What: "KV cache", Limit: "wasm heap", Need: 3 << 30, Have: 2 << 30}
	kvOOM := &gpu.KVCacheError{Limit: "out-of-memory", Need: 1 << 30, Err: &webgpu.GPUError{Kind: "out-of-memory", Message: "no memory"}}
	cases := []struct {
		err     error
		code    string
		message string
		details map[string]any
	}{
		{fmt.Errorf("%w: requestAdapter returned no adapter", gpu.ErrNoWebGPU), CodeNoWebGPU, "gpu: WebGPU is not available: requestAdapter returned no adapter", nil},
		{fmt.Errorf("upload: %w", &webgpu.LimitError{Label: "output.weight", Limit: "maxBufferSize", Need: 300, Have: 256}), CodeModelTooLarge,
			`upload: gpu: "output.weight" needs maxBufferSize = 300, the device allows 256`,
			map[string]any{"limit": "maxBufferSize", "need": uint64(300), "have": uint64(256), "object": "output.weight"}},
		{fmt.Errorf("upload: %w", &webgpu.GPUError{Kind: "out-of-memory", Message: "no memory"}), CodeModelTooLarge,
			"the GPU ran out of memory: upload: gpu: out-of-memory error: no memory", nil},
		{fmt.Errorf("load: %w", kvOOM), CodeModelTooLarge, "the GPU ran out of memory: load: " + kvOOM.Error(), nil},
		{fmt.Errorf("step: %w", &webgpu.GPUError{Kind: "validation", Label: "matmul", Message: "bad binding"}), CodeInternal,
			`step: gpu: validation error in "matmul": bad binding`, nil},
		{fmt.Errorf("load: %w", tl), CodeModelTooLarge, "model too large: " + tl.Error(),
			map[string]any{"what": "KV cache", "limit": "wasm heap", "need": int64(3 << 30), "have": int64(2 << 30), "over": int64(1 << 30)}},
		{fmt.Errorf("load: %w", &loading.ShardSizeError{File: "model-00001.bin", Bytes: 10, Want: 12}), CodeIntegrity,
			"shard model-00001.bin: 10 bytes, the manifest says 12", map[string]any{"shard": "model-00001.bin"}},
		{fmt.Errorf("load: %w", &loading.OptionError{Msg: "context length 0"}), CodeBadRequest, "context length 0", nil},
		{fmt.Errorf("load: %w", &loading.ModelError{Msg: "manifest.json: bad"}), CodeBadModel, "manifest.json: bad", nil},
	}
	for _, c := range cases {
		e := Classify(c.err)
		if e.Code != c.code || e.Message != c.message || !reflect.DeepEqual(e.Details, c.details) || !errors.Is(e, c.err) {
			t.Errorf("Classify(%v) = %q %q %v, want %q %q %v", c.err, e.Code, e.Message, e.Details, c.code, c.message, c.details)
		}
	}
}

// TestNoBackendImports: the protocol layer maps the backends' and the
// loader's errors through errcode, without importing them.
func TestNoBackendImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"wasmllm/cpu", "wasmllm/gpu", "wasmllm/gpu/webgpu", "wasmllm/wasm/loading"} {
		if slices.Contains(pkg.Imports, p) {
			t.Errorf("package api imports %s", p)
		}
	}
}
