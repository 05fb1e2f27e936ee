//go:build js

package gpu

import "wasmllm/model"

// Argmax implements model.Backend.
func (b *Backend) Argmax(out, logits model.Tensor) { b.opErr("Argmax", "not implemented yet") }

// TopK implements model.Backend.
func (b *Backend) TopK(ids, vals, logits model.Tensor, k int) { b.opErr("TopK", "not implemented yet") }
