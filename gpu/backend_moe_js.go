//go:build js

package gpu

import "wasmllm/model"

// MoE implements model.Backend.
func (b *Backend) MoE(out, x, router, gateUp, down model.Tensor, topK int, norm bool) {
	b.opErr("MoE", "not implemented yet")
}
