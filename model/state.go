package model

import (
	"errors"
	"fmt"

	"wasmllm/loader"
)

// HybridCache is one sequence's memory in a model with Gated DeltaNet
// layers: the attention layers' KV cache, and each linear layer's conv
// state ((K-1), ConvDim) and recurrent state (n_v·S, S), f32 whatever the
// KV cache stores (as llama.cpp keeps them). It is the KVCache
// Model.NewCache returns for such a model.
//
// Unlike keys and values, a recurrent state cannot be cut back to an
// earlier position: the cache counts the tokens its states have consumed
// (Len), and Forward runs only at that position (a *StateError
// otherwise). ResetState starts the sequence over; SaveState and
// RestoreState keep and bring back a checkpoint.
type HybridCache struct {
	// KV is the attention layers' cache, indexed by Attention.KVLayer; nil
	// when every layer is linear.
	KV          KVCache
	Conv, State []Tensor // per linear layer (DeltaNet.Slot)
	capacity    int
	len         int
}

// Capacity implements KVCache.
func (c *HybridCache) Capacity() int { return c.capacity }

// KVHeads implements KVCache.
func (c *HybridCache) KVHeads() int {
	if c.KV == nil {
		return 0
	}
	return c.KV.KVHeads()
}

// HeadDim implements KVCache.
func (c *HybridCache) HeadDim() int {
	if c.KV == nil {
		return 0
	}
	return c.KV.HeadDim()
}

// DType implements KVCacheTyped: the KV cache's type.
func (c *HybridCache) DType() loader.DType {
	if c.KV == nil {
		return loader.F32
	}
	return KVDTypeOf(c.KV)
}

// Len is the number of tokens the states have consumed: the only position
// Forward runs at.
func (c *HybridCache) Len() int { return c.len }

// StateBytes is the size of the recurrent states (conv and recurrent, f32).
func (c *HybridCache) StateBytes(m *Model) int64 { return m.Config.StateBytes() }

// StateBytes is the size of one sequence's recurrent states: every Gated
// DeltaNet layer's conv and recurrent state, f32, whatever the context (0
// for a model without such layers).
func (c *Config) StateBytes() int64 {
	var n int64
	for _, sp := range c.Specs() {
		if sp.IsDeltaNet() {
			n += 4 * int64(sp.DeltaNet.ConvStateLen()+sp.DeltaNet.StateLen())
		}
	}
	return n
}

// ErrStatePosition is wrapped by a *StateError.
var ErrStatePosition = errors.New("model: a recurrent state cannot move to another position")

// StateError reports a Forward at a position other than the one a
// HybridCache's recurrent states are at.
type StateError struct {
	Pos, Len int
}

func (e *StateError) Error() string {
	return fmt.Sprintf("model: forward at position %d, but the recurrent state holds %d tokens (reset it, or restore a checkpoint)", e.Pos, e.Len)
}

func (e *StateError) Unwrap() error { return ErrStatePosition }

// Recurrent reports whether the model keeps a recurrent state beside the
// KV cache (its caches are *HybridCache).
func (m *Model) Recurrent() bool { return m.Config.Hybrid() }

// newHybridCache allocates kv (nil when no layer is attention) and zeroed
// states for every linear layer.
func (m *Model) newHybridCache(kv KVCache, capacity int) *HybridCache {
	h := &HybridCache{KV: kv, capacity: capacity}
	for _, sp := range m.Config.Specs() {
		if sp.IsDeltaNet() {
			d := sp.DeltaNet
			h.Conv = append(h.Conv, m.b.NewF32(d.ConvKernel-1, d.ConvDim()))
			h.State = append(h.State, m.b.NewF32(d.ValueHeads*d.HeadDim, d.HeadDim))
		}
	}
	return h
}

// ResetState zeroes cache's recurrent states: the sequence starts over
// (its KV positions are overwritten as it goes). A cache that is not a
// *HybridCache has nothing to reset.
func (m *Model) ResetState(cache KVCache) {
	h, ok := cache.(*HybridCache)
	if !ok {
		return
	}
	for i := range h.Conv {
		for _, t := range []Tensor{h.Conv[i], h.State[i]} {
			m.b.WriteF32(t, make([]float32, numel(t)))
		}
	}
	h.len = 0
}

// SaveState copies src's recurrent states and length into dst, a
// checkpoint made by NewCheckpoint (the KV cache is not copied: its
// positions up to src.Len() stay valid while the sequence only grows past
// them).
func (m *Model) SaveState(dst, src *HybridCache) {
	for i := range src.Conv {
		m.b.CopyRows(dst.Conv[i], src.Conv[i], 0)
		m.b.CopyRows(dst.State[i], src.State[i], 0)
	}
	dst.len = src.len
}

// RestoreState brings cache's recurrent states back to checkpoint's.
func (m *Model) RestoreState(cache, checkpoint *HybridCache) { m.SaveState(cache, checkpoint) }

// NewCheckpoint allocates recurrent states (without a KV cache) to save a
// sequence's state into.
func (m *Model) NewCheckpoint() *HybridCache { return m.newHybridCache(nil, 0) }

func numel(t Tensor) int {
	n := 1
	for _, d := range t.Shape() {
		n *= d
	}
	return n
}
