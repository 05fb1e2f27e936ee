package gpu

import "wasmllm/model"

// CheckConfig refuses, as a *model.UnsupportedError, a model whose layers
// need kernels the WebGPU backend does not have yet: Qwen3.5's Gated
// DeltaNet layers, its attention's output gate and partial (sectioned)
// RoPE, and the MoE's shared expert. Backend.CheckLayers (model.Build)
// and the browser's plan (wasm/loading) call it, so such a model fails
// before its weights load instead of computing without them.
func CheckConfig(c *model.Config) error {
	var what string
	switch {
	case c.Hybrid():
		what = "Gated DeltaNet layers"
	case c.AttnOutputGate:
		what = "the attention output gate"
	case c.RopeDim != 0 && c.RopeDim != c.HeadDim, c.RopeSections != nil:
		what = "partial or sectioned RoPE"
	case c.SharedExpertFFN > 0:
		what = "the MoE's shared expert"
	default:
		return nil
	}
	return &model.UnsupportedError{Backend: "webgpu", Arch: c.Arch, What: what}
}
