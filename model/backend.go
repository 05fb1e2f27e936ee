package model

import "wasmllm/loader"

// Shape letters used throughout:
//
//	T  tokens in a batch          D  hidden size (embedding_length)
//	V  vocabulary                 F  MLP intermediate size (per expert for MoE)
//	H  query heads                Hk key/value heads
//	Dh head dim                   S  KV cache capacity (context length)
//	E  experts                    A  active experts per token (top-k)
//	L  layers                     K  a matmul's inner dimension, N its output rows

// Tensor is an array owned by a Backend. Row-major; the last dimension is
// contiguous.
type Tensor interface {
	Shape() []int
}

// Backend runs the model's ops: exactly the ops Forward calls, each in the
// fused form the GPU runs in one dispatch where it can (7 per dense layer at
// decode). The cpu package is the reference; the gpu package runs the same
// ops as WGSL kernels. Every op has a plain-loop Go reference of the same
// name in package cpu, and every backend passes one conformance suite
// (package backendtest).
//
// Ops are issued in order; a backend may defer execution until a Read.
type Backend interface {
	// Upload makes a weight tensor resident. Weights keep their dtype
	// (F32, F16, Q8_0, Q4_0, the planar Q8/Q4 shard layouts, or the
	// K-quants Q2_K..Q6_K as ggml's blocks); other dtypes are the caller's
	// to convert first.
	Upload(w *loader.Tensor) (Tensor, error)
	// NewF32 and NewI32 allocate zeroed activations.
	NewF32(shape ...int) Tensor
	NewI32(shape ...int) Tensor
	// Free releases an activation or weight.
	Free(t Tensor)
	// WriteI32 copies host values into an I32 tensor (token ids, positions).
	WriteI32(t Tensor, v []int32)
	// WriteF32 copies host values into an F32 activation.
	WriteF32(t Tensor, v []float32)
	// ReadF32 and ReadI32 copy a tensor back to the host, finishing all
	// pending work first.
	ReadF32(t Tensor, dst []float32) error
	ReadI32(t Tensor, dst []int32) error
	// NewKVCache allocates the cache for L layers of S positions, Hk heads of Dh.
	NewKVCache(layers, capacity, kvHeads, headDim int) (KVCache, error)

	// Embed gathers rows: out (T, D) f32 = table[ids[t]]; table (V, D); ids (T) i32.
	Embed(out, table, ids Tensor)
	// MatMul computes out (T, N) = x (T, K) · wᵀ for a weight w (N, K),
	// with the prologue and epilogue f asks for (a norm before, SiluAndMul
	// or a residual add after; the zero MatMulFusion is the plain product):
	// every linear layer of Forward is one MatMul. out and x are distinct
	// tensors.
	MatMul(out, x, w Tensor, f MatMulFusion)
	// RoPEKV prepares a layer's attention in place on the merged projection
	// qkv (T, C), C = (H+2Hk)*Dh, or (2H+2Hk)*Dh with an output gate (the
	// gate's H*Dh columns follow v and are left as they are): each query
	// and key head RMS-normalised with qw and kw (Dh) when qw is not nil
	// (Qwen3's q/k norm), bias (a (C) f32 vector) added to every row when
	// not nil (Qwen2's q/k/v biases), the first heads = H+Hk heads rotated
	// by r at the positions pos (T) i32, and the keys and values written
	// into layer's cache at pos. kvHeads 0 is a layer that reads another
	// layer's keys and values (Gemma 4): qkv's rows are the H query heads
	// alone, rotated, and nothing is written. Dh is the cache's head dim; r rotates the
	// first r.Dim dims of each head (r.Dim < Dh: partial rotary, the rest
	// pass through), with frequencies r.InvFreq (a zero frequency leaves its
	// pair as it is).
	RoPEKV(qkv, pos, bias, qw, kw Tensor, heads, kvHeads int, eps float32, r *RoPE, cache KVCache, layer int)
	// Attend computes causal GQA attention for each token t of qkv over
	// layer's cache positions [0, pos[t]] (RoPEKV wrote this batch's keys
	// and values), scaled by 1/sqrt(Dh): out (T, H*Dh), H out's (qkv's rows may hold the
	// queries alone: a layer reading another's KV). window > 0 is a
	// sliding window (Mistral's sliding_window): token t attends only to the
	// last window of those, (pos[t]-window, pos[t]]. With gated, qkv's rows
	// are (2H+2Hk)*Dh, [q | k | v | gate], and each output value is
	// multiplied by sigmoid of its gate value, gate (H*Dh) in out's order
	// (Qwen3.5's output gate).
	Attend(out, qkv, pos Tensor, cache KVCache, layer, window int, gated bool)
	// MoE is the sparse MLP on the residual stream, in place:
	// res (T, D) += MoE(RMSNorm(res) * norm): router logits = x·routerᵀ,
	// softmax over E, the top-A experts, their weights renormalised to sum
	// 1 when normTopK is set, and Σ weight_a · down_a(SiluMul(gateUp_a · x)),
	// plus, when f.Shared has weights, the shared expert:
	// sigmoid(x·shared.Gate) · shared.Down(SiluMul(shared.GateUp · x)).
	// norm (D); router (E, D); gateUp (E, 2F, D); down (E, D, F). f's
	// other fields are Gemma 4's: GeGLU experts, the router's own input,
	// per-expert scales, the sum post-normed and added elsewhere.
	MoE(res, norm Tensor, eps float32, router, gateUp, down Tensor, topK int, normTopK bool, f MoEFusion)
	// AddNorm adds a row-wise RMSNorm: out (T, D) += RMSNorm(x (T, D)) ·
	// w (D), with eps (Gemma 4's post_ffw_norm over the sum of its dense
	// and routed branches).
	AddNorm(out, x, w Tensor, eps float32)
	// DeltaNet is a Gated DeltaNet layer's mixing of T tokens of one
	// sequence, after its input projection and before its output one:
	// proj (T, sp.ProjWidth()) holds each token's [q k v (the conv's
	// sp.ConvDim() channels) | z (n_v·S) | beta (n_v) | alpha (n_v)] before
	// any activation; out (T, n_v·S) gets y, head-major. Per token, in order:
	//   - the causal depthwise conv over the last K rows of q k v (the
	//     K-1 of convState ((K-1), ConvDim) f32, oldest first, then the
	//     token's), conv[c] = Σ_i X[i][c]·convW[c][i], convW (ConvDim, K);
	//     convState then holds the last K-1 raw rows;
	//   - silu; q and k L2-normalised per head, x/max(‖x‖, eps); q scaled
	//     by 1/sqrt(S);
	//   - beta = sigmoid(beta), g = a·softplus(alpha + dtBias), a and
	//     dtBias (n_v) f32 (softplus(x) = x above 20);
	//   - for value head j with key head j mod n_k and its state M =
	//     state[j] (S × S, f32, [key a][value b]): M *= exp(g);
	//     d = beta·(v − Mᵀk); M += k⊗d; o = Mᵀq;
	//   - y = RMSNorm(o)·norm (norm (S), per head, with eps)·silu(z).
	// state is (n_v·S, S). Any grouping of the tokens (the chunked form of
	// a prefill) must give the token-by-token result to rounding.
	DeltaNet(out, proj, convW, a, dtBias, norm, convState, state Tensor, sp DeltaNetSpec, eps float32)
	// GeluGate is Gemma 4's per-layer input gate: out (T, P) =
	// gelu_tanh(gate (T, P)) * src[:, col0:col0+P], src (T, C) f32.
	GeluGate(out, gate, src Tensor, col0 int)
	// Scale multiplies every value of x (an f32 activation) by s, in
	// place (Gemma's embedding scale sqrt(D)).
	Scale(x Tensor, s float32)
	// CopyRows copies rows [row0, row0+R) of src (_, C) into dst (R, C).
	CopyRows(dst, src Tensor, row0 int)
	// Argmax writes the index of each row's maximum (lowest index on ties):
	// logits (T, V) f32 -> out (T) i32. NaN reads as +Inf, and a row whose
	// maximum is +Inf gives -1-i instead, i the lowest index holding NaN
	// or +Inf (the logits cannot be sampled: the caller says why).
	Argmax(out, logits Tensor)
	// TopK writes each row's k largest logits in descending order, ties to
	// the lowest id: logits (T, V) -> ids (T, k) i32, vals (T, k) f32. NaN
	// reads as +Inf.
	TopK(ids, vals, logits Tensor, k int)
}

// MoEFusion is MoE's optional parts; the zero value is Qwen3-MoE's
// sparse block.
type MoEFusion struct {
	// Shared is the shared expert (Qwen3.5-MoE); the zero value is none.
	Shared SharedExpert
	// GeluMul: each expert is a GeGLU, gelu_tanh(gate)·up (MatMulFusion's
	// GeluMul), not SiluMul (Gemma 4).
	GeluMul bool
	// RouterNorm, when not nil, is the router's own input weight (D) f32:
	// the logits are (RMSNorm(res)·RouterNorm)·routerᵀ, the experts still
	// read RMSNorm(res)·norm (Gemma 4: ffn_gate_inp.scale/sqrt(D)).
	RouterNorm Tensor
	// ExpertScale, when not nil, (E) f32, multiplies expert e's output
	// (after its routing weight is computed and renormalised; Gemma 4's
	// ffn_down_exps.scale).
	ExpertScale Tensor
	// PostNorm, when not nil, (D): the sum (shared expert included) is
	// RMS-normalised per row with this weight, with eps, before it is
	// added (Gemma 4's post_ffw_norm_2).
	PostNorm Tensor
	// Out, when not nil, (T, D) f32, is where the sum is added instead of
	// res, which is then only read (Gemma 4: beside the dense branch).
	Out Tensor
}

// SharedExpert is an MoE's shared expert (Qwen3.5-MoE): a gated MLP every
// token runs, scaled by a sigmoid gate. The zero value is none.
type SharedExpert struct {
	GateUp Tensor // (2Fs, D)
	Down   Tensor // (D, Fs)
	Gate   Tensor // (D) f32: the scale is sigmoid(x · Gate)
}

// KVCache is a backend's key/value store for every layer.
type KVCache interface {
	// Capacity is the number of positions S the cache holds.
	Capacity() int
	// KVHeads and HeadDim are Hk and Dh.
	KVHeads() int
	HeadDim() int
}

// PairReader is an optional Backend interface: a backend that reads an I32
// and an F32 tensor (the top-k ids and logits) in one round trip (the GPU:
// one submit, one map). ReadPair falls back to two reads elsewhere.
type PairReader interface {
	ReadI32F32(ids Tensor, idsDst []int32, vals Tensor, valsDst []float32) error
}

// ReadPair reads ids and vals, in one round trip where b is a PairReader.
func ReadPair(b Backend, ids Tensor, idsDst []int32, vals Tensor, valsDst []float32) error {
	if pr, ok := b.(PairReader); ok {
		return pr.ReadI32F32(ids, idsDst, vals, valsDst)
	}
	if err := b.ReadI32(ids, idsDst); err != nil {
		return err
	}
	return b.ReadF32(vals, valsDst)
}

// LogitMasker is an optional Backend interface: structured output's token
// mask applied where the logits are, so a constrained greedy step still
// reads back only the argmax (both backends have it; the engine masks a
// full row on the host elsewhere).
type LogitMasker interface {
	// MaskLogits sets to -Inf, in place, every logit of logits (T, V) f32
	// whose bit is clear in mask (ceil(V/32)) i32: bit id%32 of word id/32,
	// one mask for every row.
	MaskLogits(logits, mask Tensor)
}

// AsyncReader is an optional Backend interface: a readback that returns
// before the backend is done, so the next decode step can be submitted
// first (the engine's pipelined decode; the GPU). Reads complete in the
// order they were started, and work recorded after one runs after it.
type AsyncReader interface {
	StartReadI32(t Tensor) (PendingI32, error)
}

// PendingI32 is a read StartReadI32 started: Wait copies its values.
type PendingI32 interface {
	Wait(dst []int32) error
}

// LayerMarker is an optional Backend interface: a backend that counts its
// work per layer (the GPU: the dispatches it records). Forward calls
// MarkLayer(l) before layer l's first op and MarkLayer(-1) after the last
// layer's.
type LayerMarker interface {
	MarkLayer(l int)
}

// MatMulFusion is MatMul's prologue and epilogue.
type MatMulFusion struct {
	// Norm, when not nil, is an RMSNorm weight (K): x is read as
	// RMSNorm(x) * Norm, each row of K values, with Eps.
	Norm Tensor
	Eps  float32
	// SiluMul reads w (2F, K) as the merged gate_up: out (T, F) =
	// silu(gate) * up (SiluMul of the product).
	SiluMul bool
	// GeluMul reads w (2F, K) as a GeGLU's merged gate_up: out (T, F) =
	// gelu_tanh(gate) * up, gelu_tanh(x) = 0.5x(1 + tanh(sqrt(2/π)(x +
	// 0.044715x³))) (Gemma). At most one of SiluMul and GeluMul.
	GeluMul bool
	// Scale, when not 0, multiplies the result (after SiluMul or GeluMul)
	// before the post-norm (Gemma 4's per-layer projection, 1/sqrt(D)).
	Scale float32
	// PostNorm, when not nil, is an RMSNorm weight (N, or F after SiluMul
	// or GeluMul): each row of the result is read as RMSNorm(row) *
	// PostNorm, with Eps, before it is stored or added (Gemma's sandwich
	// norms). With PostNormGroup G > 0 (G divides the row), each G values
	// are normalised on their own, still weighted by PostNorm's column
	// (Gemma 4's per-head q/k/v norms, its per-layer inputs' norm).
	PostNorm      Tensor
	PostNormGroup int
	// SoftCap, when > 0, caps each value v of the result at SoftCap·
	// tanh(v/SoftCap), before any add (Gemma's final logit soft-cap).
	SoftCap float32
	// Add adds the result to out (a residual): out += x · wᵀ.
	Add bool
}

// KVCacheAllocator is an optional Backend interface: a backend that can
// keep its KV cache in a type other than f32 (both backends: F32, F16 or
// KVQ8). Model.NewCacheOf uses it; the Backend interface stays as it is.
// RoPEKV stores into such a cache in its type, and Attend reads it there.
type KVCacheAllocator interface {
	// NewKVCacheOf allocates a cache that stores keys and values as dt.
	NewKVCacheOf(dt loader.DType, layers, capacity, kvHeads, headDim int) (KVCache, error)
}

// PrefillChunker is an optional Backend interface: the tokens per prefill
// batch the backend runs best, engine.Options.PrefillChunk's default (128
// for a backend without it).
type PrefillChunker interface {
	PrefillChunk() int
}

// KVCacheTyped is an optional KVCache interface: the type the cache stores.
// A cache without it stores f32.
type KVCacheTyped interface {
	DType() loader.DType
}

// KVDTypeOf is the type cache stores: its DType, or F32.
func KVDTypeOf(cache KVCache) loader.DType {
	if c, ok := cache.(KVCacheTyped); ok {
		return c.DType()
	}
	return loader.F32
}

// RoPE describes the rotary embedding of one model.
type RoPE struct {
	Dim  int  // rotated dims per head: Dh, or fewer (partial rotary, Qwen3.5)
	NeoX bool // rotate halves (x[i], x[i+Dim/2]); false: adjacent pairs (x[2i], x[2i+1])
	// InvFreq holds the Dim/2 inverse frequencies, with any llama3 scaling
	// or GGUF rope_freqs factors already applied.
	InvFreq []float32
	// Scale multiplies cos and sin (LongRoPE's attention factor, so every
	// rotated q·k term is scaled by Scale²); 0 reads as 1.
	Scale float32
}

// CosSinScale is r.Scale, or 1 when it is 0.
func (r *RoPE) CosSinScale() float32 {
	if r.Scale == 0 {
		return 1
	}
	return r.Scale
}
