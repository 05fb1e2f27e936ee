package gpu

import (
	"fmt"

	"wasmllm/model"
)

// CheckConfig refuses, as a *model.UnsupportedError, a model whose layers
// the WebGPU kernels cannot run: Gated DeltaNet heads of more than 256
// dims (deltanet_step.wgsl and deltanet_chunk.wgsl give a head's value
// columns one thread each), and attention heads of more than 256 (Gemma 4
// E2B's global layers' 512). Backend.CheckLayers (model.Build) and the
// browser's plan (wasm/loading) call it, so such a model fails before its
// weights load instead of computing without them. Qwen3.5's layers (the
// Gated DeltaNet, the attention's output gate and partial RoPE, the MoE's
// shared expert) run within that.
func CheckConfig(c *model.Config) error {
	if c.Hybrid() && c.LinearHeadDim > deltaMaxS {
		return &model.UnsupportedError{Backend: "webgpu", Arch: c.Arch,
			What: fmt.Sprintf("Gated DeltaNet heads of %d dims (at most %d)", c.LinearHeadDim, deltaMaxS)}
	}
	for _, sp := range c.Specs() {
		if !sp.IsDeltaNet() && sp.Attention.HeadDim > maxHeadDim {
			// Gemma 4 E2B's global layers have heads of 512.
			return &model.UnsupportedError{Backend: "webgpu", Arch: c.Arch,
				What: fmt.Sprintf("attention heads of %d dims (at most %d)", sp.Attention.HeadDim, maxHeadDim)}
		}
	}
	return nil
}

// maxHeadDim is the largest head the attention kernels take (rope_kv.wgsl
// stages a head in 256 floats of workgroup memory).
const maxHeadDim = 256
