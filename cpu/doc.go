// Package cpu is the reference model.Backend in plain Go (its hot loops
// also in AVX2 assembly natively, in SIMD128 in the browser, each giving
// the Go loop's bits). ref.go holds the
// plain-loop definition of every op (Embed, MatMul with its fusions,
// RoPEKV, Attend, MoE, AddNorm, Argmax, TopK, MaskLogits, DotKQuant; DeltaNet in
// ref_deltanet.go), each the
// numeric oracle for the kernel of the same name on every backend
// (package backendtest); Backend runs faster equivalents: goroutines across
// output rows, quantised weights read block by block in place, no
// allocation per step. The K-quants (Q2_K..Q6_K, ggml's blocks) have a dot
// product per block type (kquant.go). A weight of row blocks in different
// types (model.RowStacker: Q4_K_M's q/k/v) is multiplied block by block,
// each on its own type's kernel and split across ranks as any weight, into
// its columns of the output (stack.go; TestStackRows: the same bits as each
// block alone).
//
// # Gated DeltaNet
//
// Backend.DeltaNet (deltanet.go) runs the conv, SiLU, L2 norms and gates
// over the batch, then the value heads across the goroutines: one token
// by the recurrence (decode), more in chunks of 64 in the WY form
// (llama.cpp's build_delta_net_chunking): per chunk a unit lower-triangular
// solve, then the state read and updated once. A 150-token prefill agrees
// with 150 decode steps to 5e-7 (TestDeltaNetChunkedEqualsDecode). It
// has no SIMD128 kernel yet: in the browser it runs as plain Go (and a
// gated attention layer's Attend takes the Go loop too).
//
// # The exponential
//
// Softmax, SiLU and the router use expf (math.go), a float32 exponential
// of our own: Cody and Waite's reduction and Cephes' polynomial, every
// product rounded on its own, so that the SIMD module's four-lane vexp
// gives the same bits (TestExpf). It replaced math.Exp, a float64 function
// the module had ported op for op: the exponential was half of a 512-token
// prefill on the tiny models in Chromium (SiLU 37 of 159 ms, attention
// 82 ms), and the polynomial in four lanes costs a tenth of that.
//
// # Typed KV caches
//
// KVCache keeps F32, F16 or q8 (model.KVQ8: int8 with an f32 scale per
// block of 32 values of a head, or per head row) keys and values. RoPEKV
// stores a row in the cache's type (QuantizeKVQ8); Attend reads it there,
// a q8 key's dot product summed block by block (Σ q·int8 times the
// block's scale), a value's weighted sum likewise: no f32 copy of the
// cache exists. StoreKV is the reference (what the cache keeps of a row).
// Only f32 caches take the SIMD128 attention kernel in the browser: f16
// and q8 run the plain-Go loop (runTyped), natively and in the browser.
//
// # SIMD in the browser
//
// Go's js/wasm port emits no SIMD128, so in the browser the matmuls, the
// dequantisation tiles, the cached attention and SiLU run in a second, small
// wasm module (package cpu/internal/wasmsimd, simd_js.go). The plain-Go
// loops keep the module's order of operations (four lanes over each block,
// scaled into four row accumulators, added pairwise), so the two give the
// same bits: the loops are the fallback (no memory handed over, no
// SIMD128) and the reference, checked bit for bit in Node.js natively
// (TestSIMDKernels) and in both browsers (TestSIMDInBrowser). In the
// browser a K-quant's decode rows go through the same tiles as a prefill's
// (dequantise 16 rows, then the F32 kernel) rather than a dot product per
// row, in the SIMD path and its plain-Go fallback alike (decodeRows);
// natively the K-quants keep their fused Go dot products.
//
// # SIMD natively
//
// On amd64 CPUs with AVX2 and F16C the native engine's hot loops run in
// Go assembly (simd_amd64.s, chosen at start-up by CPUID): the decode GEMV
// of Q8_0, Q4_0 and the planar Q8/Q4, two rows to a ymm register (each
// 128-bit half one row's four lanes, as the SIMD128 kernels keep them);
// the dequantisation of prefill's 16-row tiles of those types; and the f32
// GEMM every tile (of any type, the K-quants' included) and every f32
// weight goes through, four rows by four tokens, over row chunks of about
// 128 KiB. Each does its plain-Go loop's multiplies and adds, in its order,
// rounded one by one (no FMA), so the bits are the same with and without
// the kernels (TestNativeGemv, TestNativeDequant, TestNativeGemm,
// TestNativeMatMul print the index, got and want of a difference;
// backendtest and the goldens pass both ways). WASMLLM_NOSIMD=1 at
// start-up, or UseSIMD(false), runs the Go loops, as does any other CPU
// (backendtest's TestCPUPlainGo). Measured on one thread's CPU time at
// Llama-3.2-1B's ffn shape, 8192x2048 (BenchmarkNativeMatMul): Q4_0 decode
// 3.4x the Go loop, Q8_0 2.3x, f32 1.9x; prefill of 64 tokens 21x (Q4_0),
// 13x (Q8_0), 6x (f32). The K-quants' decode dot products, attention and
// the element-wise ops are still Go.
//
// # Ranks: the CPU engine across Web Workers
//
// Go's js/wasm port runs one thread, so the browser's CPU engine is
// parallel across ranks (ranks.go, ranks_js.go, web/rank.js): rank 0 is
// the engine's own instance and runs the model; ranks 1..N-1 are Web
// Workers, each its own instance of the same compiled module with its own
// SIMD kernels. Every weight matrix of at least RankOptions.MinShardBytes
// (1 MiB) is split by output rows at upload (multiples of 16), so the
// weights' memory is split N ways. A matmul sends x to every peer, computes
// rank 0's rows meanwhile and gathers the peers' rows; an embedding lookup
// asks the peer that holds the row.
//
// This is vLLM's ColumnParallelLinear with gathered outputs applied to every
// linear layer and a vocab-parallel embedding, not vLLM's pairing of
// column- and row-parallel layers with two all-reduces a layer: a gather
// needs no reduction, so every output value is computed whole by one rank
// with the one-rank kernel and the outputs are bit-identical for every N
// (TestRanksSplit, backendtest, the goldens at 1, 2 and 3 ranks natively
// and in both browsers), at the cost of one exchange per matmul instead of
// two per layer. Attention, norms, RoPE, the router and the MoE experts
// (3-D tensors) stay on rank 0.
//
// In the browser a split matrix goes to the ranks straight from its
// verified shard, one rank's rows at a time (Backend.UploadFrom), so rank
// 0's heap never holds it whole; the plan before the download
// (wasm/loading's Limits.Ranks) counts what each rank's heap holds, so a
// model up to N times one heap's budget loads (e2e's TestCPURanksHeap:
// refused on one rank, loaded on three).
//
// The exchange is two SharedArrayBuffers (ranks_js.go: the page must be
// cross-origin isolated); each step is one call through syscall/js. A
// failure is a *RankError (the API's cpu_rank_failed, which unloads the
// model for reload()): a rank whose program ends or throws is marked dead
// at once, one that stops answering fails after RankOptions.Timeout, and an
// error inside a job, a panic included, comes back as its message. The page,
// not the engine's worker, starts the rank workers (Firefox stalled workers
// nested in a worker that blocks in Atomics.wait). Chromium does not end a
// worker blocked in Atomics.wait on terminate(), so unloading first posts a
// quit, on which a rank lets go of its weights, calls close() and returns
// to its event loop.
//
// The encoder ops (model.EncoderOps: AddBias with the erf GELU, LayerNorm,
// Rope with optional q/k norms, AttendSeq with GQA, a symmetric window or
// a causal mask; Pool; encoder.go, references in ref_encoder.go) run a
// text-embedding batch: AddBias and LayerNorm split rows across the
// workers; AttendSeq is two products per (sequence, head), Q·Kᵀ then P·V
// (the masked scores dropped before the softmax),
// on the matmul kernel (AVX2 natively, SIMD128 in the browser), so the
// bidirectional attention of a 128-token input costs what its matmuls do
// (a bge-small-shaped batch of 64×128 tokens went from 2.7 to 6.0
// embeddings/s on two loaded cores with it).
package cpu
