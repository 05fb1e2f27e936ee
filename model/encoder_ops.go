package model

// EncoderOps is the optional Backend interface of the encoder families
// (family_bert.go): the ops their layers need beyond MatMul and Embed. Each
// has a plain-loop reference of the same name in package cpu and is in the
// conformance suite (package backendtest).
//
// A batch of S sequences is their tokens one after another, T in all; seq
// (T) i32 gives each token's sequence (each sequence one contiguous run of
// rows, as Encoder lays them out), and bounds (S, 2) i32 each sequence's
// rows [start, end).
type EncoderOps interface {
	// AddBias adds bias (N) f32 to every row of x (T, N), in place, then
	// applies the erf GELU, x·(1+erf(x/√2))/2, to every value when gelu is
	// set.
	AddBias(x, bias Tensor, gelu bool)
	// LayerNorm sets x (T, D) = LN(x + add) · w + b per row, in place:
	// (v - mean) / sqrt(var + eps) with the biased variance; add (T, D) is
	// nil or added first (a post-norm's residual); w and b (D) f32.
	LayerNorm(x, add, w, b Tensor, eps float32)
	// Rope rotates the first heads heads (of headDim) of every row of x
	// (T, C) in place by r at the positions pos (T) i32: the q and k of an
	// encoder's attention, with no cache.
	Rope(x, pos Tensor, heads, headDim int, r *RoPE)
	// AttendSeq is bidirectional multi-head attention within sequences:
	// qkv (T, 3·H·Dh) holds each token's [q | k | v]; token t attends to
	// every token u with seq[u] == seq[t], scores q·k/√Dh softmaxed;
	// out (T, H·Dh).
	AttendSeq(out, qkv, seq Tensor, heads, headDim int)
	// Pool writes one row per sequence: out (S, D) from x (T, D) and
	// bounds (S, 2): the mean of the sequence's rows (PoolMean), its first
	// row (PoolCLS) or its last (PoolLast).
	Pool(out, x, bounds Tensor, mode Pooling)
}
