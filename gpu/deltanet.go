package gpu

import "wasmllm/model"

// deltaScratchFloats is the Gated DeltaNet scratch of a batch of tb
// tokens (tp padded to whole chunks): deltanet_chunk.wgsl's layout, act
// (tb, ConvDim), G (n_v, tp), U, W, Q, K (n_v, tp, S), A and Aq
// (n_v, tp, C). A decode step uses its act only.
func deltaScratchFloats(sp model.DeltaNetSpec, tb int) int {
	tp := (tb + deltaChunkT - 1) / deltaChunkT * deltaChunkT
	nv, S := sp.ValueHeads, sp.HeadDim
	return tb*sp.ConvDim() + nv*tp + 4*nv*tp*S + 2*nv*tp*deltaChunkT
}

// DeltaNetBindings are the largest buffers a Gated DeltaNet layer of sp
// binds on WebGPU, in bytes: its recurrent state (n_v·S, S) f32, and the
// scratch of the smallest prefill part (one 64-token chunk; a longer
// batch runs in parts that fit). The browser's plan checks both against
// the binding limit.
func DeltaNetBindings(sp model.DeltaNetSpec) (state, scratch int64) {
	return 4 * int64(sp.StateLen()), 4 * int64(deltaScratchFloats(sp, deltaChunkT))
}
