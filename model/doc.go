// Package model is the model: its Config, the canonical tensor set every
// source is mapped onto, the layers a family's row names, and one Forward
// over a Backend.
//
// # One canonical tensor set
//
// Every source (GGUF, Hugging Face, llama2.c, converted folders) is mapped
// onto one set of names and layouts (canonical.go), with Q/K/V
// merged into attn_qkv, gate/up into ffn_gate_up, and the experts' gate/up
// into ffn_gate_up_exps (E, 2F, D). Qwen2's q/k/v biases are merged into
// attn_qkv.bias in the order of the weight's rows, F32. A merge concatenates
// whole rows on the host, which is lossless for every block-quantised type;
// parts of different types (llama-quantize's Q4_K_M: Q4_K q and k, Q6_K v
// on some layers) are kept as row blocks in their own types, a
// loader.Mixed tensor (stack.go), which a backend with RowStacker reads
// block by block in MatMul (an MoE's experts of mixed types are still
// widened to F32). So the forward pass, both backends, the
// converter and the browser's loader see one shape per model,
// Weights.Check validates it once, and the converter writes the canonical
// set, so the browser binds shard bytes to kernels with no name mapping and
// no repacking. FromGGUFLazy and FromHFLazy map a source without reading
// its tensors: each canonical tensor, merged ones included, is read when it
// is asked for, so the converter holds one tensor at a time.
// Each source format is a table from its tensor names to the canonical
// ones (ggufTensors, hfTensors), applied by one function (mapper.go); which
// canonical tensors a layer holds follows from its spec (canonical.go), so
// Check, the mapper and the converter read one statement of it.
//
// Qwen3.5's Hugging Face checkpoints (Qwen3_5ForCausalLM,
// Qwen3_5MoeForCausalLM, and the ForConditionalGeneration forms whose text
// model's keys are under text_config and its tensors under
// model.language_model.) are mapped as llama.cpp's converter maps them
// (conversion/qwen.py): norm weights stored as 1 + w except the Gated
// DeltaNet's, A_log as -exp(A_log), the conv squeezed, the value heads
// reordered from the grouped order to the tiled one, the experts stacked
// (per expert, or transformers 5's fused gate_up_proj and down_proj), the
// MTP block's mtp.* tensors under the GGUF's names (merge_qwen35_hf.go,
// source_hf_qwen35*.go).
//
// RoPE layouts are not unified: GGUF llama's Q/K rows are permuted for
// adjacent pairs, Hugging Face keeps the half-split order, and Qwen3 uses
// half-split everywhere. Config.RopeNeoX records which; both rotations
// exist as kernels. A test loads each tiny model from its GGUF and from its
// Hugging Face folder (and stories260K from .gguf and .bin) and requires
// the same logits.
//
// # Layers and families
//
// A Model is a list of Layers, each a TokenMixer (*Attention or *DeltaNet)
// then a ChannelMixer (*GatedMLP, *MoE, or Gemma 4's *GemmaMoE: both side
// by side), each reading the residual stream
// through its own RMSNorm and adding its output back. Build makes them from
// Config.Specs(), which reads the family's row of Families (family.go:
// llama, qwen2, qwen3, qwen3moe, qwen35, qwen35moe, phi3) and the config's
// parameters; a config may ask only for what its family's layers have
// (Config.Validate).
//
// Qwen3.5's families are hybrid (Config.LayerTypes): Gated DeltaNet layers
// (a causal conv and the gated delta rule on a recurrent state, Backend's
// DeltaNet op) between gated attention layers (the q projection's per-head
// gate, reordered on load to follow v, applied by Attend; partial NEOX
// RoPE whose IMROPE sections reduce to per-pair frequencies for text,
// RopeSpec.InvFreq). Their cache is a *HybridCache: KV for the attention
// layers only, f32 conv and recurrent states for the others, and a token
// count: Forward refuses any other position (*StateError), since a state
// cannot be cut back; ResetState, SaveState and RestoreState start over or
// move to a checkpoint. A backend without these kernels refuses such a
// config before Build uploads a weight (LayerChecker, *UnsupportedError). Mistral's
// Hugging Face configs are llama's layout; its sliding_window is
// Config.SlidingWindow, passed to Attend: a token attends to the last W
// keys only (the cache still holds every position; the GPU kernels skip the
// chunks and tiles before the window); a window as long as the context is
// none. A Qwen3.5 source's NextN/MTP block loads only when asked
// (LoadOptions.MTP; Config.MTPLayers, its tensors at layer index Layers):
// Model.MTP, a draft model over the trunk's final hidden rows
// (Model.ForwardHidden), for the engine's speculative decoding (mtp.go).
// phi3 (Phi-3.5-mini, Phi-4-mini) rotates with LongRoPE (longrope.go): a
// short and a long factor set (canonical tensors), each a frequency table,
// with cos and sin scaled by the attention factor (RoPE.Scale); each pass
// uses one set, as Model.LongRoPE says (Hugging Face's choice per pass by
// default, llama.cpp's per cache, or a fixed one).
// Adding a family is a row of Families, plus, where it needs new math,
// a new kind with its plain-loop reference in package cpu (ref.go), its CPU
// op and its WGSL kernel, and backendtest cases.
//
// # The Backend
//
// Backend is exactly the ops Forward calls: memory (Upload, NewF32, NewI32,
// Free, WriteI32, WriteF32, ReadF32, ReadI32, NewKVCache), Embed, MatMul
// with its MatMulFusion (every linear layer is one MatMul: the pre-norm
// folded in, SiluAndMul for gate_up, the residual add for o_proj and down),
// RoPEKV, Attend, MoE (in place on the residual, with an optional shared
// expert, or Gemma 4's parts: MoEFusion), AddNorm (out += RMSNorm(x)·w),
// DeltaNet, CopyRows, Argmax and TopK.
// Ops read the merged QKV row layout directly, so the interface needs no
// strided views. A dense layer is four ops for attention and two for the
// MLP, which the GPU runs as 7 dispatches at decode (9 for an MoE layer).
// What only some backends have is an optional interface, not more methods:
// LogitMasker, AsyncReader (the engine's pipelined decode), PairReader
// (top-k ids and logits in one round trip, through ReadPair), LayerMarker,
// KVCacheAllocator (an f16 or q8 KV cache, KVQ8: both backends; a backend
// without it gets f32 from NewCacheOf, which says so through KVDTypeOf),
// PrefillChunker and LayerChecker. Every op has a
// plain-loop reference of the same name in package cpu, and
// backendtest.Run checks any backend against them with seeded inputs and
// awkward shapes.
//
// # Untrusted configs
//
// Config.Validate bounds every size (MaxLayers and friends, a few times past
// the largest real models), requires floats finite and in range, and counts
// the weights with checked arithmetic; every source calls it before it
// reads a layer, and so does the browser's plan. Each source names the
// failing field by its own key (num_hidden_layers, metadata
// llama.block_count, config.num_layers).
package model
