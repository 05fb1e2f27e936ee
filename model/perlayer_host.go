package model

import (
	"fmt"

	"wasmllm/loader"
)

// Gemma 4's per-layer embedding table (NamePLEmbed, (V, L·P)) is read one
// row per token, and for E2B it is larger than the rest of the weights
// (35·256 values a token over 262,144 tokens). With
// Weights.PerLayerOnHost it stays in host memory (the worker's heap, or
// natively the loaded bytes) instead of a backend tensor: each forward
// gathers its tokens' rows there, dequantised to f32, and writes them into
// the batch's per-layer scratch before any GPU work of the pass (L·P·4
// bytes a token: PerLayerUploadBytes), where the on-device path gathers
// them with Embed. A forward then needs its ids on the host, so
// ForwardFrom (the engine's pipelined decode) refuses: HostIDs.

// perLayerHost is the table in host memory and the rows of the batch
// under way.
type perLayerHost struct {
	t    *loader.Tensor
	rows []float32
}

// newPerLayerHost checks that t, the table, has its bytes here and a type
// whose rows dequantise.
func newPerLayerHost(w *Weights, t *loader.Tensor) (*perLayerHost, error) {
	if t.Data == nil || !loader.CanDequantize(t.DType) {
		return nil, &loader.FormatError{File: w.Source, Field: "tensor " + t.Name, Offset: -1,
			Err: fmt.Errorf("%w: the per-layer table kept on the host needs its %v bytes there", loader.ErrUnsupported, t.DType)}
	}
	if len(t.Shape) != 2 {
		return nil, fmt.Errorf("model: per-layer table %v is not a matrix", t.Shape)
	}
	return &perLayerHost{t: t}, nil
}

// gather returns the rows of ids, (T, L·P) f32.
func (h *perLayerHost) gather(ids []int32) ([]float32, error) {
	W := h.t.Shape[1]
	if cap(h.rows) < len(ids)*W {
		h.rows = make([]float32, len(ids)*W)
	}
	rows := h.rows[:len(ids)*W]
	for r, id := range ids {
		if err := loader.DequantizeRow(h.t, int(id), rows[r*W:(r+1)*W]); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// PerLayerOnHost reports whether the per-layer embedding table is kept in
// host memory (Weights.PerLayerOnHost) rather than on the backend.
func (m *Model) PerLayerOnHost() bool { return m.plHost != nil }

// HostIDs reports whether a forward needs its token ids on the host: the
// per-layer table is kept there, so ForwardFrom cannot run.
func (m *Model) HostIDs() bool { return m.plHost != nil }

// PerLayerUploadBytes is what a token costs in uploads when the per-layer
// table is kept on the host: its row in f32, L·P·4 bytes (0 otherwise).
func (m *Model) PerLayerUploadBytes() int64 {
	if m.plHost == nil {
		return 0
	}
	return PerLayerRowBytes(&m.Config)
}

// PerLayerRowBytes is one token's per-layer embeddings in f32, L·P·4
// bytes: what a token uploads when the table stays on the host.
func PerLayerRowBytes(c *Config) int64 {
	return 4 * int64(c.Layers) * int64(c.PerLayerInput)
}
