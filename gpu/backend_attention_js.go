//go:build js

package gpu

import (
	"errors"

	"wasmllm/model"
)

// NewKVCache implements model.Backend.
func (b *Backend) NewKVCache(layers, capacity, kvHeads, headDim int) (model.KVCache, error) {
	return nil, errors.New("gpu: KV cache not implemented yet")
}

// Attention implements model.Backend.
func (b *Backend) Attention(out, qkv, pos model.Tensor, cache model.KVCache, layer int) {
	b.opErr("Attention", "not implemented yet")
}
