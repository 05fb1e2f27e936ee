package gpu

import (
	"math"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
)

// Math is the arithmetic of the prefill GEMM tile (common.wgsl GEMM_TILE).
type Math int

const (
	// MathAuto is f16 on a hardware adapter with shader-f16 and f32
	// elsewhere: on a software adapter f16 math is emulated, and slower
	// (Firefox's llvmpipe: 5.2 against 7.5 GFLOP/s at T=128,
	// BenchmarkMatMulGEMM).
	MathAuto Math = iota
	// MathF32 stages and multiplies in f32.
	MathF32
	// MathF16 stages the tiles in f16 and multiplies in f16, runs of four
	// products summed in f16 and then in f32: half the workgroup memory
	// per k, about 1e-3 relative error. It needs shader-f16 (f32 without).
	MathF16
)

// tuning is every choice the backend makes by adapter, in one place:
// NewBackend computes it once from the device's adapter info, features and
// limits, and the ops read their workgroup sizes, batch bounds and paths
// from it. A CPU (software) adapter, SwiftShader in Chromium or llvmpipe in
// Firefox, runs a workgroup's threads in turn, pays for every workgroup
// and barrier, and is bound by arithmetic; a GPU is bound by reading the
// weights and wants many workgroups. The measurement behind each choice is
// beside it. Tests force the other kind's shapes by flipping cpu on a copy.
type tuning struct {
	cpu bool // a software adapter (webgpu.AdapterInfo.Fallback)
	// subgroups and their sizes (0 when the adapter tells none)
	subgroups    bool
	sgMin, sgMax int
	// the workgroup memory and invocations limits (0: none known)
	wgStorage, wgThreads int
	// f16math: the prefill GEMM in f16 (BackendOptions.PrefillMath);
	// wideLoads: it loads activations as vec4 (WIDE of matmul_gemm.wgsl),
	// on hardware adapters, where the vector load is the cheaper, not on
	// software ones, where it measured slower
	f16math, wideLoads bool
}

func newTuning(info webgpu.AdapterInfo, f webgpu.Features, l webgpu.Limits, m Math) tuning {
	t := tuning{
		cpu:       info.Fallback,
		subgroups: f.Subgroups, sgMin: f.SubgroupMinSize, sgMax: f.SubgroupMaxSize,
		wgStorage: l.MaxComputeWorkgroupStorageSize, wgThreads: l.MaxComputeInvocationsPerWorkgroup,
		wideLoads: !info.Fallback,
	}
	switch m {
	case MathAuto:
		t.f16math = f.ShaderF16 && !info.Fallback
	case MathF16:
		t.f16math = f.ShaderF16
	}
	return t
}

// gemvMaxT is the largest T that MatMul runs as GEMV dispatches; larger
// batches take the tiled GEMM. On SwiftShader (BenchmarkMatMulCrossover,
// q4 N=K=2048) the two are level per token at T=64 and the GEMM is 3x
// slower at T=16. On GPUs the GEMV reads the weights once per 4 tokens and
// stays memory-bound to about T=32 on a laptop-class GPU (~40 FLOP per
// byte), while a 64-token GEMM tile is mostly padding below that: GEMV up
// to 32 there, pending a measurement on real hardware.
func (t tuning) gemvMaxT() int {
	if t.cpu {
		return 64
	}
	return 32
}

// prefillChunk is model.PrefillChunker's batch: 512 tokens on a GPU, so
// that the prefill GEMMs whose N is the hidden size (o_proj, down) launch
// enough BM×BN tiles to fill it (Llama-3.1-8B's o_proj: 64 tiles of rows by
// 8 of tokens, 512 workgroups, against 128 at 128 tokens); 128 on a CPU
// adapter, where larger batches only hold more memory.
func (t tuning) prefillChunk() int {
	if t.cpu {
		return 128
	}
	return 512
}

// maxDecodeSplits bounds NS, the fixed number of workgroups that share the
// keys of one (kv head batch, token) in the decode kernel: on a GPU enough,
// with the Hk (or more) head batches, to fill it (8 kv heads × 32 = 256
// workgroups a token), while a step at a short position launches few that
// only exit. A CPU adapter (SwiftShader) pays tens of microseconds for
// every workgroup of a kernel with barriers, even one that exits at once,
// and has a few cores to fill: there 4 (BenchmarkAttentionDecode, Llama-3-8B
// heads: 1 to 4 splits are level at positions 1000 and 4000, 32 are 1.3x
// slower there and 2x slower at position 10).
const (
	maxDecodeSplits         = 32
	maxDecodeSplitsFallback = 4
)

// decodeSplits is NS for a cache of capacity positions: one split per
// 64-key chunk up to the adapter's bound.
func (t tuning) decodeSplits(capacity int) int {
	most := maxDecodeSplits
	if t.cpu {
		most = maxDecodeSplitsFallback
	}
	return max(1, min((capacity+decodeChunk-1)/decodeChunk, most))
}

// decodeLanes is the threads that share a key in the decode kernel. On a
// GPU Dh/16 threads share each key's scores (laneCount), so that
// neighbouring threads load neighbouring 16-byte units of a key row and
// keep their share of the queries in registers; on a CPU adapter, which
// runs a workgroup's threads in turn, one thread a key (the lanes' extra
// barriers and sums cost more there than they save).
func (t tuning) decodeLanes(Dh int) int {
	if t.cpu {
		return 1
	}
	return laneCount(Dh)
}

// laneCount is Dh/16 where the kernel can use it: Dh a multiple of 16 and
// Dh/16 (at least 2) dividing the 64-key chunk; 1 otherwise.
func laneCount(Dh int) int {
	if l := Dh / 16; Dh%16 == 0 && l >= 2 && decodeChunk%l == 0 {
		return l
	}
	return 1
}

// moeDecodeMaxT is the most tokens a MoE chunk runs through the per-token
// GEMV path on a GPU; larger chunks group tokens by expert, so that an
// expert's weights are read once per tile, not per token.
const moeDecodeMaxT = 4

// moeDecodeMax is moeDecodeMaxT on a GPU. A CPU adapter runs every chunk
// token by token: its GEMVs are bound by arithmetic, not by reading
// weights, and on SwiftShader the tiles ran 3.7x slower (a 128-token chunk
// of Qwen3-30B-A3B's experts, q4 and Q4_K alike, cmd/bench's moe_prefill
// rows).
func (t tuning) moeDecodeMax() int {
	if t.cpu {
		return math.MaxInt
	}
	return moeDecodeMaxT
}

// gemvShape is a GEMV configuration: wg threads along K, r weight rows and
// tb tokens per workgroup.
type gemvShape struct{ wg, r, tb int }

// gemvShape picks matmul_gemv's workgroup (see gemvWG): r rows and tb
// tokens of K/gemvChunk chunks each.
func (t tuning) gemvShape(dt loader.DType, T, K int) gemvShape {
	s := gemvShape{r: 8, tb: min(T, gemvMaxTB)}
	if s.tb > 2 {
		s.r = 4
	} else if t.cpu {
		s.r = 16 // fewer, longer workgroups: 1.3x faster on SwiftShader
	}
	s.wg = t.gemvWG(K/gemvChunk(dt), (s.r+1)*s.tb) // the sums and the norm's sums of squares
	return s
}

// gemvChunk is the number of values of each weight dtype in the 16-byte chunk
// a GEMV thread loads.
func gemvChunk(dt loader.DType) int {
	switch dt {
	case loader.F16:
		return 8
	case loader.Q8:
		return 16
	case loader.Q4:
		return 32
	}
	return 4
}

// gemvWG picks the threads of a GEMV-like workgroup (matmul_gemv,
// moe_gemv) whose threads share `chunks` chunk loads and reduce nv sums. On a
// GPU, enough threads for one pass over the chunks (one 16-byte chunk per
// thread) where possible; on a CPU adapter, which runs a workgroup's
// subgroups in turn and pays for each barrier, one subgroup looping over
// them: 3x faster on SwiftShader (subgroups of 4), and 4 threads where the
// adapter tells no subgroup size (kquantWG differs there).
func (t tuning) gemvWG(chunks, nv int) int {
	if t.cpu {
		return max(4, t.sgMax)
	}
	wg := 32
	for wg < chunks && wg < 256 {
		wg *= 2
	}
	// the shared-memory reduction holds nv*wg floats without subgroups
	for nv*wg*4 > min(16384, t.wgStorage) && wg > 32 {
		wg /= 2
	}
	if t.wgThreads > 0 && wg > t.wgThreads {
		wg = t.wgThreads
	}
	return wg
}

// kquantWG is gemvWG for the K-quant GEMV and experts (kq_rows), at most
// kquantMaxWG. On a CPU adapter that tells no subgroup size (llvmpipe in
// Firefox, 8 invocations a SIMD step on AVX2) it is 8 threads: against 4
// there, Q2_K's gate_up GEMV ran 1.38x faster and the Q4_K experts 1.49x,
// the other K-quants level or up to 1.1x. (q4's matmul_gemv keeps 4 there:
// at 8 its down and qkv GEMVs ran 1.3-1.4x faster but gate_up 0.8-0.9x, and
// a 16-layer q4 1B model decoded 5% slower.)
func (t tuning) kquantWG(chunks, nv int) int {
	if t.cpu && t.sgMax == 0 {
		return min(kquantMaxWG, 8)
	}
	return min(kquantMaxWG, t.gemvWG(chunks, nv))
}

// kquantRO is the K-quant GEMV's and experts' row octets per workgroup
// (RO of matmul_kquant.wgsl) for tb tokens a workgroup: two (16 rows) on a
// CPU adapter for one or two tokens, as matmul_gemv's 16 rows there.
func (t tuning) kquantRO(tb int) int {
	if t.cpu && tb <= 2 {
		return 2
	}
	return 1
}

// moeGemvShape is moe_gemv's threads and rows per workgroup for weights of
// dtype dt whose workgroups stride over n values (K, or A*F for down). WG
// is picked as for matmul_gemv. A CPU adapter takes 16 rows (its
// workgroups cost even when short: 1.2x faster than 8 there); GPUs 8, for
// more workgroups (the down GEMV has only D/R per token) and fewer
// registers.
func (t tuning) moeGemvShape(dt loader.DType, n int) (wg, r int) {
	r = 8
	if t.cpu {
		r = moeGemvMaxRows
	}
	return t.gemvWG(n/moeChunk(dt), r), r
}

// moeChunk is the values of dtype dt in the MoE kernels' 16-byte chunks; a
// q8 chunk is half a group, but groups are whole.
func moeChunk(dt loader.DType) int {
	switch dt {
	case loader.F16:
		return 8
	case loader.Q8, loader.Q4:
		return 32
	}
	return 4
}

// oneSubgroup is true when the adapter has subgroups and a workgroup of wg
// threads is at most the smallest (the kernels' ONESG), so that a
// subgroupAdd alone reduces over the workgroup.
func (t tuning) oneSubgroup(wg int) bool {
	return t.subgroups && wg <= t.sgMin
}
