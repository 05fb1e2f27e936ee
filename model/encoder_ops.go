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
	// Rope rotates the first heads+kvHeads heads (of headDim) of every row
	// of x (T, C) in place by r at the positions pos (T) i32: the q and k
	// of an encoder's attention, with no cache. When qw is not nil, each of
	// the first heads heads is first RMS-normalised (eps) and weighted by
	// qw (headDim) f32, each of the next kvHeads by kw (Gemma's q/k norm).
	Rope(x, pos, qw, kw Tensor, heads, kvHeads, headDim int, eps float32, r *RoPE)
	// AttendSeq is bidirectional GQA attention within sequences: qkv
	// (T, (H+2·Hk)·Dh) holds each token's [q | k | v]; query head h of
	// token t attends, with key/value head h/(H/Hk), to every token u with
	// seq[u] == seq[t] and, when radius > 0, |u - t| <= radius (a
	// symmetric sliding window: positions within a sequence are row
	// offsets), and when causal, u <= t (a decoder's embedding batch: each
	// sequence causal, none seeing another); scores q·k/√Dh softmaxed;
	// out (T, H·Dh).
	AttendSeq(out, qkv, seq Tensor, heads, kvHeads, headDim, radius int, causal bool)
	// Pool writes one row per sequence: out (S, D) from x (T, D) and
	// bounds (S, 2): the mean of the sequence's rows (PoolMean), its first
	// row (PoolCLS) or its last (PoolLast).
	Pool(out, x, bounds Tensor, mode Pooling)
}
