package gpu

import (
	"fmt"

	"wasmllm/loader"
	"wasmllm/model"
)

// CheckConfig refuses, as a *model.UnsupportedError, a model whose layers
// the WebGPU kernels cannot run: Gated DeltaNet heads of more than 256
// dims (deltanet_step.wgsl and deltanet_chunk.wgsl give a head's value
// columns one thread each), and attention heads of more than 512 (Gemma 4
// E2B's global layers have 512). Backend.CheckLayers (model.Build) and the
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
			return &model.UnsupportedError{Backend: "webgpu", Arch: c.Arch,
				What: fmt.Sprintf("attention heads of %d dims (at most %d)", sp.Attention.HeadDim, maxHeadDim)}
		}
	}
	return nil
}

// maxHeadDim is the largest head the attention kernels take: rope_kv.wgsl
// stages a head in 512 floats of workgroup memory, the decode kernel's 64
// value threads take two vec4 each past 256 (attention_decode.wgsl's VP),
// and the prefill kernel's tiles hold 1024 floats (two rows at 512). The
// kernels are chosen per head dim at pipeline creation (override
// constants), so heads of 64 or 128 compile as before.
const maxHeadDim = 512

// headDimStep is what the attention kernels need heads of Dh values in a
// cache of dt to be a multiple of: 4 (f32), 8 (f16, whose 16-byte units
// hold 8) or 16 (q8, 16 int8 a unit), and at least 8 past 256 (the decode
// kernel's value threads then take pairs of units).
func headDimStep(Dh int, dt loader.DType) int {
	switch {
	case dt == model.KVQ8:
		return 16
	case dt == loader.F16 || Dh > maxHeadDim/2:
		return 8
	}
	return 4
}

// headDimOK reports whether the attention kernels take heads of Dh values
// in a cache of dt: a multiple of headDimStep, of at most maxHeadDim.
func headDimOK(Dh int, dt loader.DType) bool {
	return Dh > 0 && Dh <= maxHeadDim && Dh%headDimStep(Dh, dt) == 0
}
