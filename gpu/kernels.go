package gpu

import (
	"reflect"
	"unsafe"

	"wasmllm/shaders"
)

// The Go side of each kernel's interface. The WGSL is the one statement of
// it: the bindings and their access come from shaders.Parse when the kernel
// is compiled (backend_kernel_js.go), and each entry point's uniform struct
// has a Go twin here, its fields in the WGSL struct's order, which
// TestKernelParams checks against every shader; the limits the Go side
// needs are read from the shaders' consts (shaderConst). A kernel is used through its
// spec (use, in backend_kernel_js.go), which takes only that kernel's params
// type, so a wrong struct does not compile and a misordered one fails the
// native test.

// Params is a kernel's uniform block as it is uploaded: up to 16 words.
// Kernels fill it from their typed params (packParams); it keys the caches
// of uniform buffers and bind groups.
type Params [16]uint32

// maxBindings bounds a kernel's storage bindings (the bind group cache's
// key holds this many).
const maxBindings = 10

// kernelSpec names one entry point of a shader whose uniform struct is P.
// Make specs only with spec, which lists them for the tests.
type kernelSpec[P any] struct{ file, entry string }

// specInfo is a spec as the tests see it.
type specInfo struct {
	file, entry string
	params      reflect.Type
}

// kernelSpecs lists every spec made by spec.
var kernelSpecs []specInfo

func spec[P any](file, entry string) kernelSpec[P] {
	kernelSpecs = append(kernelSpecs, specInfo{file, entry, reflect.TypeFor[P]()})
	return kernelSpec[P]{file, entry}
}

// packParams copies p into the uniform's words. Every params struct holds
// only 4-byte scalars (uint32, int32, float32; TestKernelParams checks), so
// its memory is the WGSL struct's layout, a float its math.Float32bits.
func packParams[P any](p *P) (w Params) {
	n := unsafe.Sizeof(*p) / 4
	copy(w[:], unsafe.Slice((*uint32)(unsafe.Pointer(p)), n))
	return w
}

// Every kernel the backend runs.
var (
	kArgmaxPartial = spec[argmaxParams]("argmax.wgsl", "partial")
	kArgmaxMerge   = spec[argmaxParams]("argmax.wgsl", "merge")
	kTopKBlock     = spec[topkParams]("topk.wgsl", "block")
	kTopKMerge     = spec[topkParams]("topk.wgsl", "merge")
	kMaskLogits    = spec[maskLogitsParams]("mask_logits.wgsl", "main")

	kEmbed   = spec[embedParams]("embed.wgsl", "main")
	kRMSNorm = spec[rmsNormParams]("rmsnorm.wgsl", "rms_norm")
	kSiluMul = spec[siluMulParams]("silu_mul.wgsl", "main")

	// Gemma (backend_gemma_js.go): GeGLU, MatMul's post-norm and soft-cap,
	// the embedding scale
	kGeluMul  = spec[siluMulParams]("gelu_mul.wgsl", "main")
	kPostNorm = spec[postNormParams]("post_norm.wgsl", "main")
	kScale    = spec[scaleParams]("scale.wgsl", "main")
	kGeluGate = spec[geluGateParams]("gelu_gate.wgsl", "main")

	kGemv = spec[gemvParams]("matmul_gemv.wgsl", "main")
	kGemm = spec[gemmAccParams]("matmul_gemm.wgsl", "main")

	// K-quant weights (Q2_K .. Q6_K as ggml's blocks): their own GEMV,
	// GEMM and embedding gather (backend_kquant_js.go)
	kKQuantGemv  = spec[kquantParams]("matmul_kquant.wgsl", "gemv")
	kKQuantGemm  = spec[kquantParams]("matmul_kquant.wgsl", "gemm")
	kKQuantEmbed = spec[embedParams]("embed_kquant.wgsl", "main")
	kKQuantMoeGU = spec[kquantMoeParams]("moe_kquant.wgsl", "gate_up")
	kKQuantMoeDn = spec[kquantMoeParams]("moe_kquant.wgsl", "down")

	kMoeDense      = spec[moeGemvParams]("moe_gemv.wgsl", "dense")
	kMoeGateUp     = spec[moeGemvParams]("moe_gemv.wgsl", "gate_up")
	kMoeDown       = spec[moeGemvParams]("moe_gemv.wgsl", "down")
	kMoeRoute      = spec[moeRouteParams]("moe_route.wgsl", "main")
	kMoeGroup      = spec[moeGroupParams]("moe_group.wgsl", "main")
	kMoeGemmGateUp = spec[moeGemmParams]("moe_gemm.wgsl", "gate_up")
	kMoeGemmDown   = spec[moeGemmParams]("moe_gemm.wgsl", "down")
	kMoeCombine    = spec[moeCombineParams]("moe_combine.wgsl", "main")

	kRoPEKV        = spec[ropeKVParams]("rope_kv.wgsl", "main")
	kDecodePartial = spec[decodeParams]("attention_decode.wgsl", "partial")
	kDecodeReduce  = spec[decodeReduceParams]("attention_decode.wgsl", "reduce")
	kPrefill       = spec[prefillParams]("attention_prefill.wgsl", "main")

	// Gated DeltaNet (backend_deltanet_js.go): the conv, then one token's
	// recurrence, or a prefill's chunks
	kDeltaConv  = spec[deltaConvParams]("deltanet_conv.wgsl", "main")
	kDeltaStep  = spec[deltaStepParams]("deltanet_step.wgsl", "main")
	kDeltaIntra = spec[deltaChunkParams]("deltanet_chunk.wgsl", "intra")
	kDeltaState = spec[deltaChunkParams]("deltanet_chunk.wgsl", "state")
	kDeltaNorm  = spec[deltaChunkParams]("deltanet_chunk.wgsl", "norm")
)

// The uniform structs, named as in the WGSL (case and underscores aside);
// see each shader for what the fields mean.
type (
	kquantParams    struct{ N, K, Row0, Rows, T, Acc uint32 }
	kquantMoeParams struct{ K, N, E0, NE, A, T0, F, Acc uint32 }

	argmaxParams     struct{ V, NB, CH uint32 }
	topkParams       struct{ V, NB, K, L uint32 }
	maskLogitsParams struct{ V, WX uint32 }

	embedParams   struct{ D, Row0, Rows uint32 }
	rmsNormParams struct {
		S     uint32
		Eps   float32
		Count uint32
	}
	siluMulParams struct{ F, N uint32 }

	postNormParams struct {
		N, G, Groups, Norm uint32
		Eps, Cap           float32
		Acc                uint32
		Scale              float32
	}
	geluGateParams struct{ P, C, Col0, N uint32 }
	scaleParams    struct {
		N uint32
		S float32
	}

	gemvParams struct {
		N, K, Row0, Rows, T, Chunks, Norm uint32
		Eps                               float32
		Silu, Acc                         uint32
	}
	gemmParams    struct{ N, K, Row0, Rows, T uint32 }
	gemmAccParams struct{ N, K, Row0, Rows, T, Acc uint32 } // matmul_gemm: Acc adds to out

	moeGemvParams struct {
		K, N, E0, NE, A, T0, F, Acc, LDO, Norm uint32
		Eps                                    float32
	}
	moeRouteParams   struct{ E, A, Norm, NT, D, Scaled uint32 }
	moeGroupParams   struct{ E, N, TT uint32 }
	moeGemmParams    struct{ K, N, E0, NE, A, T0, F uint32 }
	moeCombineParams struct{ D, A, T0, N, Acc uint32 }

	ropeKVParams struct {
		Row, Heads, KVHeads, Half, NeoX, Bias, Norm uint32
		Eps                                         float32
		Cap, Rot                                    uint32
		Scale                                       float32 // LongRoPE's attention factor; 1: none
	}
	decodeParams struct {
		Row4, Heads, Group, Cap, NS uint32
		Scale                       float32
		Stats, NQB, Slices, Window  uint32
	}
	decodeReduceParams struct{ Heads, Cap, NS, Stats, Slices, Row4, Gate4 uint32 }

	deltaConvParams struct{ CD, W, T0, T, K uint32 }
	deltaStepParams struct {
		NK, NV, S, W, CD uint32
		Eps              float32
	}
	deltaChunkParams struct {
		NK, NV, S, W, CD, T0, TB, TP uint32
		Eps                          float32
	}
	prefillParams struct {
		Row4, Heads, Group, Cap, Rows uint32
		Scale                         float32
		Window, Gate4                 uint32
	}
)

// Limits and tile sizes the Go side needs, read from the shaders
// themselves (their const declarations), so that each is stated once, in
// the WGSL.
var (
	topkBlock = shaderConst("topk.wgsl", "CH")    // logits per workgroup: WG*PER
	topkMaxL  = shaderConst("topk.wgsl", "MAX_L") // blocks a row may have
	topkMaxV  = topkBlock * topkMaxL

	// gemvMaxTB is the most tokens one GEMV workgroup carries: each weight
	// chunk it loads serves them all.
	gemvMaxTB = shaderConst("matmul_gemv.wgsl", "MAXTB")
	// gemm tile sizes: BN weight rows by BM tokens.
	gemmBN, gemmBM = shaderConst("matmul_gemm.wgsl", "BN"), shaderConst("matmul_gemm.wgsl", "BM")

	moeMaxA        = shaderConst("moe_route.wgsl", "MAX_A")
	moeGemvMaxRows = shaderConst("moe_gemv.wgsl", "MAXR")
	moeTileRows    = shaderConst("moe_gemm.wgsl", "RT")
	moeTileT       = shaderConst("moe_gemm.wgsl", "TT") // entries per tile

	decodeChunk = shaderConst("attention_decode.wgsl", "CH") // keys per chunk

	deltaChunkT = shaderConst("deltanet_chunk.wgsl", "C")  // tokens per chunk of a DeltaNet prefill
	deltaMaxS   = shaderConst("deltanet_step.wgsl", "WG")  // a DeltaNet head's dims at most: a thread per column
	deltaStateM = shaderConst("deltanet_chunk.wgsl", "MS") // state entry: S·BB at most

	kquantMaxTB = shaderConst("matmul_kquant.wgsl", "MAXTB") // tokens per K-quant GEMV workgroup
	kquantR     = shaderConst("matmul_kquant.wgsl", "R")     // rows per K-quant GEMV workgroup
	kquantMaxWG = shaderConst("matmul_kquant.wgsl", "MAXWG") // threads per K-quant GEMV workgroup
)

// shaderIfaces holds the shaders shaderConst has parsed, each once.
var shaderIfaces = map[string]*shaders.Module{}

// shaderConst is the value of the const declaration name in file. The
// shaders are embedded, so a missing one is a programming error, caught by
// every test of the package (TestKernelConstants names them).
func shaderConst(file, name string) int {
	m, ok := shaderIfaces[file]
	if !ok {
		var err error
		if m, err = shaders.Interface(file, shaders.Features{}); err != nil {
			panic(err)
		}
		shaderIfaces[file] = m // package initialisation is one goroutine
	}
	v, err := m.Const(name)
	if err != nil {
		panic(err)
	}
	return int(v)
}
