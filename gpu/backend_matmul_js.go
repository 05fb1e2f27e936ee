//go:build js

package gpu

import "wasmllm/model"

// MatMul implements model.Backend.
func (b *Backend) MatMul(out, x, w model.Tensor) { b.opErr("MatMul", "not implemented yet") }
