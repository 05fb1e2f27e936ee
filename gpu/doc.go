// Package gpu is the WebGPU model.Backend: the model's ops as WGSL compute
// kernels (shaders/) over the binding in package gpu/webgpu, plus the KV
// cache, weight upload (split by rows to the device's binding limits) and
// top-k/argmax selection.
//
// Each kernel's interface is stated once, in its WGSL: the bind group
// layout comes from shaders.Parse of the built source, and the uniform's
// fields from a Go struct per kernel in kernels.go, in the WGSL struct's
// order, which a native test checks against every shader (as it checks the
// few Go constants that restate a shader's).
//
// A typical use:
//
//	b, d, err := gpu.OpenBackend(ctx, gpu.Options{}, gpu.BackendOptions{})
//	defer d.Close()
//	// b is a model.Backend: upload weights with b.Upload (or b.UploadJS
//	// from shard bytes held by JavaScript) and run the model's Forward on it
//
// Device and Options are the binding's webgpu.Device and webgpu.Options
// (aliases), and ErrNoWebGPU is webgpu.ErrNoWebGPU, so that code which only
// opens a backend needs no second import. The binding's error types
// (webgpu.DeviceLostError, GPUError, ShaderError, LimitError, UsageError)
// come back from the Backend's calls unchanged, for errors.As; this package
// adds KVCacheError and KVShapeError for KV caches that do not fit. The
// errors that have a stable code carry it (errcode.Coded): a lost device,
// a limit or the device's memory exceeded, no WebGPU.
//
// Everything that touches JavaScript needs GOOS=js (files with the js build
// tag); the error types build everywhere. A Backend is not safe for
// concurrent use: drive it, like its Device, from one goroutine.
//
// # Capture by equality
//
// There is no separate decode graph built at load. Each op records a
// command (pipeline, bind group, workgroup counts) in a Go slice; a Read
// turns the slice into one webgpu.Program for the JavaScript replayer and
// submits it once. Programs are cached by the exact command list (hash,
// then equality), bind groups by their buffers and parameters, uniform
// parameter buffers by value, so a repeated step allocates nothing. A
// decode step's list is the same every token (the position and token id
// live in small buffers written by the program's upload, and kernels whose
// work depends on the context length size their grid for the cache's
// capacity and exit early), so after the first step every step is: Go
// calls the ops (no JavaScript), one hash, one call into JavaScript that
// encodes and submits, one await for the 4-byte argmax. The model's Forward
// stays the only description of the computation, and prefill shapes get
// programs the same way (gpu/model_test.go counts submits, rebuilds and
// maps per step).
//
// # A decode step
//
// A dense layer records 7 dispatches and an MoE layer 9, plus the
// embedding, the lm_head and the argmax (TestDecodeDispatchesPerLayer;
// K-quant weights take their own unfused kernels, the norm one dispatch
// before; a q/k/v or gate_up of row blocks in different types,
// StackRows, one dispatch per block after the norm: 3 for Q4_K_M's mixed
// q/k/v where one type's is 2):
// qkv = GEMV(RMSNorm(res)) with the norm folded in (each workgroup sums the
// squares of the row it reads anyway and scales its sums); RoPEKV (q/k
// norm, bias, rotation and the KV-cache write, one workgroup per head);
// attention's partial and reduce (over an f32, f16 or q8 cache: a q8
// cache is int8 four to a word then an f32 scale per 32 values of a head,
// in one buffer a layer, written by RoPEKV and dequantised per 16-value
// unit where the attention kernels load it; the decode kernel reads it one
// thread a key with at most 4 queries a workgroup, since a unit's values
// take the registers of four more); res += o_proj GEMV (the residual in the
// epilogue); act = silu(gate)·up from one gate_up GEMV with the norm folded
// in (a workgroup owns gate rows and the same up rows); res += down GEMV.
// For MoE the router GEMV folds the norm and writes the normalised row for
// the experts, then the route, the experts' gate_up, and the down that
// adds into res; Qwen3.5-MoE's shared expert is two more (its gate_up and
// down, run as a one-expert MoE whose weight, sigmoid(x·gate), the route
// kernel computes beside the routed ones). Gemma 4's MoE layer is 18: its
// attention's 7 with the q/k/v per-head norm, the dense gate_up and down
// with its post-norm, two router GEMVs (the experts' input and the
// router's own), the route (which applies the experts' scales), the
// GeGLU experts' gate_up and down into a scratch, the sum's post-norm into
// the dense branch, AddNorm, the output scale (20 where its q/k/v rows mix
// block types, as a q4_0 file's Q4_0 q with Q8_0 k and v: stacked row
// blocks take the norm, then a GEMV each). The final norm is folded into
// the lm_head. Qwen3.5's attention layers are the same 5 + FFN: the
// output gate is applied where attention stores its output (the decode
// reduce, the prefill kernel), partial rotary is RoPEKV's rotation of the
// first rope-dim values. A phi3 layer (Phi-3.5-mini, Phi-4-mini) is a
// dense layer's 7: LongRoPE's two factor sets are two frequency tables of
// the same RoPEKV kernel, its attention factor a uniform that scales cos
// and sin. A Gated DeltaNet layer is 6 with a dense FFN:
// in-proj GEMV (norm folded), deltanet_conv (the causal conv and SiLU,
// a thread per channel, which also moves the conv state), deltanet_step
// (a workgroup per value head: q/k L2 norms, the gates, the state's decay,
// delta-rule update and read-out, the gated RMSNorm), out-proj GEMV (+=),
// and the FFN's 2 (TestQwen35DecodeDispatches). A DeltaNet prefill is
// the chunked WY form (deltanet_chunk.wgsl, shaders' doc): the conv, every
// 64-token chunk's intra-chunk products at once, the state carried
// through the chunks a block of value columns per workgroup, the gated
// norm; a batch whose scratch would not fit one binding runs in parts of
// whole chunks. The states stay f32 (model.HybridCache), whatever the KV
// cache stores. A Gemma 3 layer is 9 (TestGemmaDecodeDispatches): GeGLU
// is the gate_up GEMV's epilogue (gelu_tanh instead of silu), and each
// sandwich norm one post_norm dispatch after its GEMV (a row's norm needs
// the whole row: post_norm.wgsl, one workgroup a row or head, also the
// soft-cap and Gemma 4's per-head q/k/v norms). A Gemma 4 layer is 15:
// the q/k/v norms, the per-layer input (its gate GEMV, gelu_gate, proj
// and its post-norm) and the output scale (scale.wgsl); a layer sharing KV
// runs RoPEKV on its queries alone and attends over its source's cache,
// each KV group a cache of its own (model.GroupedCache). Where a GEMV
// cannot fuse (prefill batches on the GEMM, K-quant weights, a gate_up
// split into parts) MatMul runs its kernels in turn: rms_norm into a
// scratch, the product, silu_mul.
//
// The readback is what the sampler needs: the argmax's 4 bytes for plain
// greedy decoding, the top-k ids and logits in one submit (ReadI32F32)
// when the request's processors allow it, the full row only otherwise.
// StartReadI32 (model.AsyncReader, over webgpu.Device.RunReadAsync) lets
// the engine submit the next greedy step before the argmax is read; the
// GPU runs reads' work in submission order, but their completions may come
// in another order, as in Firefox, so each carries a sequence number and
// its own bytes (tested in gpu/pipeline_test.go, both browsers).
//
// # Tuning by adapter
//
// Every choice by adapter kind (GEMV workgroups and rows, the GEMV/GEMM
// crossover, the prefill batch, decode attention's splits and lanes,
// token-by-token MoE, vec4 loads, f16 GEMM math, one-subgroup reductions)
// lives in tuning.go: a tuning value NewBackend computes once from the
// adapter's info, features and limits, with the measurement behind each
// choice beside it. The ops read it and nothing else; TestTuningKinds
// checks its choices natively for SwiftShader's, llvmpipe's and a discrete
// GPU's reports, and the browser tests force the other kind's shapes on a
// copy. The main split: on a GPU a GEMV workgroup has threads enough for
// one pass along K; on a CPU adapter (gemvWG) a workgroup is one SIMD step
// of the software rasteriser looping along K, since it runs a workgroup's
// subgroups in turn and pays for every barrier (SwiftShader: 4 threads,
// 3x faster there than wide workgroups; llvmpipe: 4, except 8 for the
// K-quant GEMV and experts, kquantWG, which ran Q2_K's gate_up 1.38x and
// the Q4_K experts 1.49x faster; q4's GEMV keeps 4, since at 8 its gate_up
// ran 0.8-0.9x and a 16-layer q4 1B model decoded 5% slower). The prefill
// batch is the backend's model.PrefillChunker: 512 tokens on a GPU, so
// o_proj and down launch enough tiles; 128 on a CPU adapter.
//
// # Weights in GPU memory
//
// Weights keep their shard layout (loader.DType): the planar q4/q8 planes,
// F32, F16, and the K-quants as ggml's blocks, padded with zeros to 16-byte
// multiples at upload (kquant.go: Q2_K 84 -> 96 bytes, Q3_K 110 -> 112,
// Q6_K 210 -> 224, +14%, +1.8% and +6.7% for those tensors, values
// untouched; from JavaScript bytes a few MiB at a time through Go), so
// every block and its runs of quants, high bits and scales start on 16
// bytes. A tensor larger than the device's storage binding limit is split
// by rows at upload (on expert boundaries for MoE), so 128k-vocabulary
// embeddings and heads work on any adapter; tests force a small limit so
// the split path runs. In the browser, UploadJS writes a verified shard's
// JavaScript bytes straight into GPU buffers, so weights never pass
// through the Go heap. The KV cache is f16 by default
// (model.KVCacheAllocator; createEngine and cmd/generate; f32 selectable): half
// the bytes, about 1e-3 relative error in attention, and the goldens run
// with both.
//
// The encoder ops (model.EncoderOps, backend_encoder_js.go) are five
// kernels: add_bias (with the erf GELU, erf by Abramowitz and Stegun
// 7.1.26, |error| < 1.5e-7), layer_norm (one workgroup per row, two
// passes), rope (rope_kv's rotation without the cache), attend_seq (one
// workgroup per head and token; the keys of the token's sequence in chunks
// of 64, one score per thread, an online softmax rescaling the output kept
// in workgroup memory, heads of at most 256) and pool (CLS, mean, last).
// A batch of sequences of different lengths is one dispatch each: the
// sequences' rows lie end to end, with no padding. Measured (make bench
// -short, SwiftShader): attend_seq runs at 0.007 of the FMA probe and a
// whole small encoder batch at 0.05; attend_seq reads every key and value
// once per query, so a workgroup per block of queries sharing key/value
// tiles is the next step.
package gpu
