//go:build js

package gpu

import "wasmllm/model"

// CheckLayers implements model.LayerChecker (CheckConfig).
func (b *Backend) CheckLayers(c *model.Config) error { return CheckConfig(c) }

// DeltaNet implements model.Backend. The WebGPU backend has no Gated
// DeltaNet kernel yet: the op fails (ErrOp, at the next read), and
// CheckLayers refuses such a model before it is built.
func (b *Backend) DeltaNet(out, proj, convW, a, dtBias, norm, convState, state model.Tensor, sp model.DeltaNetSpec, eps float32) {
	b.opErr("DeltaNet", "Gated DeltaNet is not supported on WebGPU yet")
}
