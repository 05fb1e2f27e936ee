//go:build js

package gpu

import (
	"os"
	"testing"

	"wasmllm/backendtest"
	"wasmllm/gpu/webgpu"
)

// newTestBackend builds a Backend of its own on the test binary's device
// for opts (sharedDevice), with that device's compiled pipelines.
func newTestBackend(t *testing.T, opts webgpu.Options) *Backend {
	t.Helper()
	d := sharedDevice(t, opts)
	b, err := NewBackend(d, sharedPipelines(d, BackendOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBackendConformance runs the conformance suite on the WebGPU backend.
// WASMLLM_OPS limits it to one op (e.g. WASMLLM_OPS=MatMul).
func TestBackendConformance(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	t.Logf("adapter %+v, subgroups %v, f16 %v", b.d.AdapterInfo, b.d.Features.Subgroups, b.d.Features.ShaderF16)
	backendtest.Run(t, b, backendtest.Options{Short: true, Only: os.Getenv("WASMLLM_OPS")})
}

// TestBackendConformanceNoSubgroups runs the ops whose kernels have a
// subgroup path (MatMul, MoE) again without subgroups.
func TestBackendConformanceNoSubgroups(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{DisableFeatures: []string{"subgroups"}})
	if b.d.Features.Subgroups {
		t.Fatal("subgroups were not disabled")
	}
	only := os.Getenv("WASMLLM_OPS")
	if only == "" {
		only = "MatMul,MoE"
	}
	backendtest.Run(t, b, backendtest.Options{Short: true, Only: only})
}

// TestBackendConformanceDeltaNet runs the Gated DeltaNet op's full set of
// shapes (the conformance run above takes the short one): heads of up to
// 128 dims as Qwen3.5 has them, 256 (the state kernel's narrower column
// blocks) and 48, batches across chunk boundaries.
func TestBackendConformanceDeltaNet(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	backendtest.Run(t, b, backendtest.Options{Only: "DeltaNet"})
}
