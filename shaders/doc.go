// Package shaders holds the WGSL kernels, one file per op, each binding
// annotated with its shape, e.g. `// (N) f32`, with common.wgsl appended to
// each and `//#if NAME` sections resolved by Build; Parse reads each entry
// point's interface from its WGSL. Package gpu runs them; the choices that
// depend on the adapter (workgroups, splits, lanes, tile math) are gpu's
// tuning, passed in as override constants.
//
// # Decode attention
//
// attention_decode.wgsl is flash-decoding: NS splits of 64-key chunks per
// (kv head, batch of QB query heads, token), fixed at record time from the
// cache's capacity (at most 32, 4 on a CPU adapter), then a reduce. One
// workgroup holds all QB (up to 8) query heads of a GQA group in workgroup
// memory, so each K and V value is loaded once for the group. For the
// scores a thread takes a key on a CPU adapter; on a GPU Dh/16 lanes share
// a key (LANES): neighbouring threads load neighbouring 16-byte units of a
// key row, so the loads coalesce, each lane keeps four vec4 of each of up to
// four queries in registers (QB is then at most 4), and the lanes' partial
// scores are summed through a double-buffered workgroup array, one barrier
// a pass (SwiftShader runs that 1.7x slower than one thread a key, so CPU
// adapters keep that; TestAttentionDecodeLanes runs it everywhere). For
// the values a unit of the head goes over a slice of the chunk's keys, and
// each slice writes its own partial, so the workgroup ends without a
// barrier and the reduce sums NS×S partials. Queries go in blocks of four
// (scores, maxima, weights and rescaling are vec4 math, registers are named
// vectors: SwiftShader spills indexed local arrays, and a loop-body var
// without an initialiser kept its old value there). attention_prefill.wgsl
// keeps a Q tile beside the K/V tile in workgroup memory and gives each
// thread 2×2 blocks of scores and of outputs.
//
// # Gated DeltaNet
//
// Qwen3.5's linear-attention layers (model.Backend's DeltaNet) take three
// files. deltanet_conv.wgsl: the causal conv and its SiLU, a thread per
// channel looping over the batch, so it reads its channel's kept rows
// before it overwrites them. deltanet_step.wgsl (one token): a workgroup
// per value head, 256 threads as S value columns × 256/S slices of the
// keys; each column of the head's S×S state evolves on its own, so the
// slices' partial sums meet in workgroup memory twice (for Mᵀk, then for
// the updated Mᵀq) and once more for the gated RMSNorm; a row of the
// state is read by consecutive threads. deltanet_chunk.wgsl (a prefill):
// flash-linear-attention's chunked WY form, chunks of 64 tokens. intra
// runs every chunk of every value head at once (nothing in it depends on
// the state): the gates and norms, A = beta (k·k) e^(ΔG) and the masked
// (q·k) e^(ΔG) from k and q tiles of 16 dims in workgroup memory, the
// right-hand sides, and the forward substitution (I + A)⁻¹ a column per
// thread, since a column's substitution reads only that column. state
// walks the chunks in order, a workgroup per (value head, 16 value
// columns), the state's block (S × 16) in workgroup memory: v_new, the
// output and the next block are products of the chunk's scratch with the
// block alone. norm applies the gated RMSNorm in place. Everything
// between the kernels lives in one scratch buffer (its layout in
// deltanet_chunk.wgsl), which keeps every entry within 5 bindings and the
// 16 KiB of workgroup memory WebGPU guarantees.
//
// # The prefill GEMM
//
// One tile, common.wgsl's GEMM_TILE, used by matmul_gemm and matmul_kquant:
// 64 threads of 8×8 outputs, w and x staged in 16 KiB of workgroup memory
// per 32 k, 4 vec4 loads per 16 vec4 FMAs. matmul_gemm stages activations
// with one vec4 load through a second, vec4 view of x's buffer on hardware
// adapters (WIDE); SwiftShader runs that 1.15x slower, and 32-value runs per
// load (a q4 group in one 16-byte load) 1.3x slower, so software adapters
// keep scalar loads. With f16 math (by default on hardware adapters with
// shader-f16; emulated and slower on software ones) it stages f16 tiles of
// 64 k and multiplies in f16, runs of four products summed in f32.
//
// # K-quants
//
// The K-quants (Q2_K..Q6_K) are ggml's blocks (see package loader),
// padded on the GPU to 16-byte multiples (package gpu). Their kernels share
// common.wgsl's KQUANT_DOT section, one KTYPE override per type, so gate_up
// and down may differ as llama.cpp's mixes have them:
//
//   - The GEMV and the MoE experts (matmul_kquant.wgsl's gemv, up to four
//     tokens a workgroup, and moe_kquant.wgsl, entry by entry): kq_rows goes
//     token by token and row by row. A thread's step is 64 values of a block
//     (Q4_K/Q5_K: two sub-blocks; the others: 16 values of each quarter of a
//     half); it loads their activations and sums once (kq_x), then for each
//     of the workgroup's 8 or 16 rows loads that row's quants and scales as
//     16-byte loads and dots them (kq_row). The quants are widened in the f32
//     mantissa (b bits under exponent 0 give 1 + u/2^b; the sub-block's Σx
//     is taken off after) and summed with fma. Where a byte holds several
//     values, one shift places two of them at once (mm_q4word, shared with
//     q4's GEMV, and q2k_word), and an or and one and a value finish them;
//     the single high bits of Q3_K and Q5_K are sums of their own (q3k_high,
//     q5k_high); Q6_K's 6-bit values go one a shift (kq_wide). Against one
//     shift and one or per value this took Q4_K's gate_up GEMV from 43.8 to
//     28.6 ms, Q2_K's from 53 to 30 and Q3_K's from 60 to 44 (A/B side by
//     side). Only one row's chunks are live at a time: against an earlier
//     design that dotted eight rows at once, row by row was 1.24x (Q4_K)
//     to 1.47x (Q6_K) faster for one token, 1.42x for the Q4_K experts
//     (kept runs at 838c120 and c7aff1c), and 1.2x to 1.3x for two to four
//     tokens.
//   - Prefill: the shared GEMM tile through kq_get4 (matmul_kquant.wgsl's
//     gemm), and for MoE chunks past four tokens on a GPU moe_gemm.wgsl's
//     expert tiles through the same kq_get4. A CPU adapter runs every MoE
//     chunk entry by entry, whatever its dtype: there the tiles ran a
//     128-token chunk of Qwen3-30B-A3B's experts 3.7x slower than the
//     per-entry GEMVs, since its GEMVs are bound by arithmetic, not by
//     reading each expert's weights once per token.
//   - An embedding gather (embed_kquant.wgsl).
//
// On the software adapters every GEMV is bound by arithmetic, so the
// K-quants' rate per weight byte follows their time per value and their
// values per byte. In the kept run (cmd/bench/results; the kernel table's
// vs q4 column, Chromium's SwiftShader then Firefox's llvmpipe) Q4_K is
// above q4 per byte (1.43, 1.31), Q6_K too (1.07, 1.55), Q5_K under it on
// SwiftShader (0.91) and above on llvmpipe (1.15), Q2_K and Q3_K under it
// in both (0.74 and 0.68; 0.85 and 0.85); the dense GEMM tile (gemm_q4_k,
// 128 tokens) runs at 0.90x and 1.13x q4's rate.
//
// Why per-byte parity with q4 is out of reach for Q2_K and Q3_K there: with
// activations in f32 (the exact K-quant goldens require it; llama.cpp's
// Q8_K activations are a different, looser golden) each value costs at
// least its fma and one operation to widen it, and q4 pays about the same
// per value, so Q2_K would need under 0.58x of q4's time per value and Q3_K
// under 0.76x. Ablations of Q2_K on SwiftShader (wrong results, timing
// only) put the widening at about 40% of its time, the scale decode and
// loads at about 30%, the activation loads at about 12% (on llvmpipe the
// widening is under a fifth); with no widening at all Q2_K would reach
// about 1.15x q4 per byte on SwiftShader and 1.05x on llvmpipe, so parity
// needs the widening at under a quarter of its cost, and it is about two
// operations a value now, the and that isolates a value's bits being the
// least any widening takes. Q5_K's fifth bits are a second pass at the
// cost of the first; folding them into the nibbles' floats costs as many
// operations unless the GPU layout packs each byte's two 5-bit values
// together, which reads 7-9% more bytes a block on a bandwidth-bound GPU:
// not built, for that reason (reasoned, not measured).
//
// Tried and not kept, measured side by side with q4 (on this VM a kernel
// unchanged between two builds moves 10-15% against q4, which bounds what
// such runs resolve): four values of a Q2_K byte at one shift (no gain);
// f32 copies of Q2_K's d and dmin in its padding (no gain); four rows a
// call into vec4 sums (0.7-0.8x: register pressure); GPU layouts that put a
// GEMV step's scales, d and high bits in fewer loads (within the noise);
// keeping a sub-block's scale between the GEMM tile's staging calls (level
// on both adapters: the tile's FMAs dominate). On a GPU the same coalesced
// 16-byte loads are bandwidth; not measured here.
package shaders
