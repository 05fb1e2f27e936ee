package gpu

import (
	"fmt"

	"wasmllm/model"
)

// CheckConfig refuses, as a *model.UnsupportedError, a model whose layers
// the WebGPU kernels cannot run: Gated DeltaNet heads of more than 256
// dims (deltanet_step.wgsl and deltanet_chunk.wgsl give a head's value
// columns one thread each). Backend.CheckLayers (model.Build) and the
// browser's plan (wasm/loading) call it, so such a model fails before its
// weights load instead of computing without them. Qwen3.5's layers (the
// Gated DeltaNet, the attention's output gate and partial RoPE, the MoE's
// shared expert) run within that.
func CheckConfig(c *model.Config) error {
	if c.Hybrid() && c.LinearHeadDim > deltaMaxS {
		return &model.UnsupportedError{Backend: "webgpu", Arch: c.Arch,
			What: fmt.Sprintf("Gated DeltaNet heads of %d dims (at most %d)", c.LinearHeadDim, deltaMaxS)}
	}
	return nil
}
