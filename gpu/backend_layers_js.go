//go:build js

package gpu

import "wasmllm/model"

var _ model.LayerMarker = (*Backend)(nil)

// MarkLayer implements model.LayerMarker: it notes the dispatches recorded
// so far at each layer's start (layer 0 begins a new Forward) and after the
// last layer.
func (b *Backend) MarkLayer(l int) {
	if l == 0 {
		b.layerMarks = b.layerMarks[:0]
	}
	b.layerMarks = append(b.layerMarks, b.counters.Dispatches)
}

// LayerDispatches returns the dispatches each layer of the last Forward
// recorded (nil before one): the decode step's per-layer cost, counted from
// what was recorded rather than from the model's op list.
func (b *Backend) LayerDispatches() []int {
	n := len(b.layerMarks) - 1
	if n <= 0 {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(b.layerMarks[i+1] - b.layerMarks[i])
	}
	return out
}
