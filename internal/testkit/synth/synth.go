// Package synth writes GGUF models with random weights in the shapes of
// real ones (Llama-3.2-1B, DeepSeek-R1-Distill-Llama-70B, Qwen3-30B-A3B,
// Phi-4-mini, Gemma-3-1B, Gemma-4-E2B, Qwen3.5-2B, Qwen3.5-35B-A3B),
// fewer layers where a test or a software adapter needs it: the bench's
// synthetic model and the big-model loading tests. The tokenizer is a tiny
// test model's vocabulary padded to the real size with filler tokens no
// text encodes to, so a prompt tokenizes as it does with the base.
package synth

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"wasmllm/loader"
	"wasmllm/model"
)

// Shape is a model's architecture and dimensions.
type Shape struct {
	Name string // what it has the shape of, for general.name
	// Arch is "llama", "qwen3moe" (q/k norms and routed experts, FFN
	// being one expert's), "phi3" (fused attn_qkv and gate/up in ffn_up,
	// partial rotary over RopeDim dims, LongRoPE factors from
	// OrigContext of Context positions), "gemma3" (q/k norms, sandwich
	// norms, local layers of Window positions, five of every six),
	// "gemma4" (gemma3's layers, local heads of HeadDim and global ones of
	// GlobalHeadDim, every Period-th layer global, the last SharedKV
	// layers reusing earlier KV with twice the FFN, per-layer embeddings
	// of PerLayer, soft-capped logits), "qwen35" or "qwen35moe" (below;
	// FFN is one expert's, SharedFFN the shared expert's), or "qwen3" (a
	// shape only: Write refuses it).
	Arch                                                string
	Window                                              int // gemma3's and gemma4's sliding window
	GlobalHeadDim, Period, SharedKV, PerLayer           int // gemma4's
	Layers, Hidden, Heads, KVHeads, HeadDim, FFN, Vocab int
	Experts, ExpertsUsed                                int
	// Untied gives the model an output.weight of its own (else the
	// embedding is the head).
	Untied bool
	// DType is every matrix's type: loader.Q4_0 or loader.Q8_0; or, with
	// Mix, the mix's base type.
	DType loader.DType
	// Mix, when set, is a llama-quantize type mix: "Q4_K_M" (MixQ4KM).
	Mix string
	// Context is context_length (0: 8192); phi3's RopeDim (0: HeadDim)
	// and OrigContext (LongRoPE's original context; 0: none).
	Context, RopeDim, OrigContext int
	// Qwen3.5 ("qwen35", "qwen35moe": Gated DeltaNet layers, and every
	// AttnInterval-th layer (0: 4) gated attention with q/k norms and
	// partial rotary over RopeDim dims): the linear layers' key and value
	// heads of LinearHeadDim, and qwen35moe's shared expert's width.
	LinearKeyHeads, LinearValueHeads, LinearHeadDim int
	AttnInterval, SharedFFN                         int
}

// hybrid reports whether s is a Qwen3.5 shape (Gated DeltaNet layers).
func (s Shape) hybrid() bool { return s.Arch == "qwen35" || s.Arch == "qwen35moe" }

// linear reports whether layer l of a Qwen3.5 shape is a Gated DeltaNet
// layer (llama.cpp's rule for full_attention_interval).
func (s Shape) linear(l int) bool { return s.hybrid() && (l+1)%cmp.Or(s.AttnInterval, 4) != 0 }

// The real models' shapes.
var (
	Llama32_1B = Shape{Name: "Llama-3.2-1B", Arch: "llama", Layers: 16, Hidden: 2048, Heads: 32, KVHeads: 8, HeadDim: 64,
		FFN: 8192, Vocab: 128256, DType: loader.Q4_0}
	R1DistillLlama70B = Shape{Name: "DeepSeek-R1-Distill-Llama-70B", Arch: "llama", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8,
		HeadDim: 128, FFN: 28672, Vocab: 128256, Untied: true, DType: loader.Q8_0}
	Qwen3_30BA3B = Shape{Name: "Qwen3-30B-A3B", Arch: "qwen3moe", Layers: 48, Hidden: 2048, Heads: 32, KVHeads: 4, HeadDim: 128,
		FFN: 768, Experts: 128, ExpertsUsed: 8, Vocab: 151936, Untied: true, DType: loader.Q8_0}
	// Phi4Mini is Phi-4-mini-instruct: 200,064 tokens, tied embeddings,
	// GQA 24/8 × 128, 96 of 128 dims rotated, LongRoPE from 4096 of 131072
	// positions.
	Phi4Mini = Shape{Name: "Phi-4-mini", Arch: "phi3", Layers: 32, Hidden: 3072, Heads: 24, KVHeads: 8, HeadDim: 128,
		FFN: 8192, Vocab: 200064, DType: loader.Q4_0, Context: 131072, RopeDim: 96, OrigContext: 4096}
	Gemma3_1B = Shape{Name: "Gemma-3-1B", Arch: "gemma3", Layers: 26, Hidden: 1152, Heads: 4, KVHeads: 1, HeadDim: 256,
		FFN: 6912, Vocab: 262144, Window: 512, DType: loader.Q4_0}
	// Gemma4E2B is Gemma 4 E2B's text model: 35 layers, four local (heads
	// of 256, window 512) to one global (heads of 512), 8/1 heads, the
	// last 20 layers on earlier KV with a double-wide FFN (12288), per-layer
	// embeddings of 256 (a (262144, 35×256) table), 262,144 tokens, tied.
	Gemma4E2B = Shape{Name: "Gemma-4-E2B", Arch: "gemma4", Layers: 35, Hidden: 1536, Heads: 8, KVHeads: 1, HeadDim: 256,
		GlobalHeadDim: 512, Period: 5, SharedKV: 20, PerLayer: 256, FFN: 6144, Vocab: 262144, Window: 512, DType: loader.Q4_0}
	// Qwen3_1_7B is Qwen3-1.7B (tied embeddings), the dense attention
	// model Qwen3.5-2B replaces; synth writes no qwen3 file (the bench
	// compares its KV cache with Qwen3.5's states).
	Qwen3_1_7B = Shape{Name: "Qwen3-1.7B", Arch: "qwen3", Layers: 28, Hidden: 2048, Heads: 16, KVHeads: 8, HeadDim: 128,
		FFN: 6144, Vocab: 151936, DType: loader.Q4_0, Context: 40960}
	// Qwen35_2B is Qwen3.5-2B's text model: 24 layers, every 4th gated
	// attention (8/2 heads of 256, a quarter rotated), the others Gated
	// DeltaNet (16 key and 16 value heads of 128), tied embeddings.
	Qwen35_2B = Shape{Name: "Qwen3.5-2B", Arch: "qwen35", Layers: 24, Hidden: 2048, Heads: 8, KVHeads: 2, HeadDim: 256,
		FFN: 6144, Vocab: 248320, DType: loader.Q4_0, Context: 262144, RopeDim: 64,
		LinearKeyHeads: 16, LinearValueHeads: 16, LinearHeadDim: 128}
	// Qwen35_35BA3B is Qwen3.5-35B-A3B's text model: 40 layers as
	// Qwen3.5-2B's pattern (16/2 attention heads, 32 DeltaNet value heads),
	// 256 experts of 512, 8 routed plus a shared one of 512.
	Qwen35_35BA3B = Shape{Name: "Qwen3.5-35B-A3B", Arch: "qwen35moe", Layers: 40, Hidden: 2048, Heads: 16, KVHeads: 2, HeadDim: 256,
		FFN: 512, Experts: 256, ExpertsUsed: 8, SharedFFN: 512, Vocab: 248320, Untied: true, DType: loader.Q4_0, Context: 262144,
		RopeDim: 64, LinearKeyHeads: 16, LinearValueHeads: 32, LinearHeadDim: 128}
)

// global reports whether layer l of a gemma3 or gemma4 shape is global.
func (s Shape) global(l int) bool {
	return (l+1)%cmp.Or(s.Period, 6) == 0
}

// shared reports whether layer l of a gemma4 shape reuses earlier KV.
func (s Shape) shared(l int) bool { return s.Arch == "gemma4" && l >= s.Layers-s.SharedKV }

// ffn is layer l's FFN width (gemma4's shared layers: twice FFN).
func (s Shape) ffn(l int) int {
	if s.shared(l) {
		return 2 * s.FFN
	}
	return s.FFN
}

// headDim is layer l's head dim.
func (s Shape) headDim(l int) int {
	if s.Arch == "gemma4" && s.global(l) {
		return s.GlobalHeadDim
	}
	return s.HeadDim
}

// Write writes a GGUF model of shape s with random weights (seeded by the
// shape) to path, through a temporary file renamed into place. base is a
// GGUF whose tokenizer it takes (a Llama-3 one for llama, a Qwen one for
// qwen3moe).
func Write(path, base string, s Shape) error {
	if s.Mix != "" && s.Mix != MixQ4KM {
		return fmt.Errorf("synth: mix %q: want %q or none", s.Mix, MixQ4KM)
	}
	if s.Mix == "" && s.DType != loader.Q4_0 && s.DType != loader.Q8_0 {
		return fmt.Errorf("synth: dtype %v: want Q4_0 or Q8_0", s.DType)
	}
	if s.Arch == "qwen3" {
		return fmt.Errorf("synth: %s: no qwen3 files (its shape is for the bench's tables)", s.Name)
	}
	meta, err := tokenizerMeta(base, s.Vocab)
	if err != nil {
		return err
	}
	meta = append(archMeta(s), meta...)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = loader.WriteGGUF(w, 3, meta, tensors(s, true))
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// archMeta is the architecture's metadata.
func archMeta(s Shape) []loader.MetaKV {
	u := func(v int) uint32 { return uint32(v) }
	a := s.Arch
	ft := uint32(2) // MOSTLY_Q4_0
	switch {
	case s.Mix == MixQ4KM:
		ft = 15 // MOSTLY_Q4_K_M
	case s.DType == loader.Q8_0:
		ft = 7
	}
	meta := []loader.MetaKV{
		{Key: "general.architecture", Value: a},
		{Key: "general.name", Value: fmt.Sprintf("synthetic %s shape, %d layers, random %s", s.Name, s.Layers, cmp.Or(s.Mix, s.DType.String()))},
		{Key: "general.file_type", Value: ft},
		{Key: "general.quantization_version", Value: uint32(2)},
		{Key: a + ".block_count", Value: u(s.Layers)},
		{Key: a + ".context_length", Value: u(cmp.Or(s.Context, 8192))},
		{Key: a + ".embedding_length", Value: u(s.Hidden)},
		{Key: a + ".feed_forward_length", Value: u(s.FFN)},
		{Key: a + ".attention.head_count", Value: u(s.Heads)},
		{Key: a + ".attention.head_count_kv", Value: u(s.KVHeads)},
		{Key: a + ".attention.key_length", Value: u(cmp.Or(s.GlobalHeadDim, s.HeadDim))},
		{Key: a + ".attention.value_length", Value: u(cmp.Or(s.GlobalHeadDim, s.HeadDim))},
		{Key: a + ".rope.freq_base", Value: float32(500000)},
		{Key: a + ".attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
		{Key: a + ".vocab_size", Value: u(s.Vocab)},
	}
	if a == "llama" || a == "phi3" || s.hybrid() {
		meta = append(meta, loader.MetaKV{Key: a + ".rope.dimension_count", Value: u(cmp.Or(s.RopeDim, s.HeadDim))})
	}
	if s.hybrid() {
		S := s.LinearHeadDim
		meta = append(meta,
			loader.MetaKV{Key: a + ".rope.dimension_sections", Value: []int32{11, 11, 10, 0}},
			loader.MetaKV{Key: a + ".ssm.conv_kernel", Value: u(4)},
			loader.MetaKV{Key: a + ".ssm.state_size", Value: u(S)},
			loader.MetaKV{Key: a + ".ssm.group_count", Value: u(s.LinearKeyHeads)},
			loader.MetaKV{Key: a + ".ssm.time_step_rank", Value: u(s.LinearValueHeads)},
			loader.MetaKV{Key: a + ".ssm.inner_size", Value: u(S * s.LinearValueHeads)},
			loader.MetaKV{Key: a + ".full_attention_interval", Value: u(cmp.Or(s.AttnInterval, 4))})
		if s.SharedFFN > 0 {
			meta = append(meta, loader.MetaKV{Key: a + ".expert_shared_feed_forward_length", Value: u(s.SharedFFN)})
		}
	}
	if s.OrigContext > 0 {
		ctx := float64(cmp.Or(s.Context, 8192))
		attn := math.Sqrt(1 + math.Log(ctx/float64(s.OrigContext))/math.Log(float64(s.OrigContext)))
		meta = append(meta,
			loader.MetaKV{Key: a + ".rope.scaling.original_context_length", Value: u(s.OrigContext)},
			loader.MetaKV{Key: a + ".rope.scaling.attn_factor", Value: float32(attn)})
	}
	if a == "gemma3" || a == "gemma4" {
		meta = append(meta,
			loader.MetaKV{Key: a + ".attention.sliding_window", Value: u(s.Window)},
			loader.MetaKV{Key: a + ".rope.freq_base_swa", Value: float32(10000)})
	}
	if a == "gemma4" {
		ffn, local := make([]uint32, s.Layers), make([]bool, s.Layers)
		for l := range s.Layers {
			ffn[l], local[l] = u(s.ffn(l)), !s.global(l)
		}
		meta[slices.IndexFunc(meta, func(kv loader.MetaKV) bool { return kv.Key == a+".feed_forward_length" })].Value = ffn
		meta = append(meta,
			loader.MetaKV{Key: a + ".attention.key_length_swa", Value: u(s.HeadDim)},
			loader.MetaKV{Key: a + ".attention.value_length_swa", Value: u(s.HeadDim)},
			loader.MetaKV{Key: a + ".rope.dimension_count", Value: u(s.GlobalHeadDim)},
			loader.MetaKV{Key: a + ".rope.dimension_count_swa", Value: u(s.HeadDim)},
			loader.MetaKV{Key: a + ".attention.sliding_window_pattern", Value: local},
			loader.MetaKV{Key: a + ".attention.shared_kv_layers", Value: u(s.SharedKV)},
			loader.MetaKV{Key: a + ".embedding_length_per_layer_input", Value: u(s.PerLayer)},
			loader.MetaKV{Key: a + ".final_logit_softcapping", Value: float32(30)})
	}
	if s.Experts > 0 {
		meta = append(meta,
			loader.MetaKV{Key: a + ".expert_count", Value: u(s.Experts)},
			loader.MetaKV{Key: a + ".expert_used_count", Value: u(s.ExpertsUsed)},
			loader.MetaKV{Key: a + ".expert_feed_forward_length", Value: u(s.FFN)})
	}
	return meta
}

// tensors are the model's weights: random matrices, norms of ones, and an
// F32 router; without data only their names, types and shapes (what the
// file would hold, for Bytes).
func tensors(s Shape, data bool) []*loader.Tensor {
	rng := rand.New(rand.NewPCG(1, uint64(s.Layers)))
	mat := func(name string, shape ...int) *loader.Tensor {
		dt := s.DType
		if s.Mix == MixQ4KM {
			dt = q4KMType(name, s.Layers, !s.Untied)
		}
		if !data {
			return &loader.Tensor{Name: name, DType: dt, Shape: shape}
		}
		if dt.BlockElems() == 256 {
			return randomK(rng, dt, name, shape...)
		}
		return random(rng, dt, name, shape...)
	}
	f32 := func(name string, shape []int, make func() *loader.Tensor) *loader.Tensor {
		if !data {
			return &loader.Tensor{Name: name, DType: loader.F32, Shape: shape}
		}
		return make()
	}
	one := func(name string, n int) *loader.Tensor {
		return f32(name, []int{n}, func() *loader.Tensor { return ones(name, n) })
	}
	D, Q, KV, F := s.Hidden, s.Heads*s.HeadDim, s.KVHeads*s.HeadDim, s.FFN
	out := []*loader.Tensor{mat("token_embd.weight", s.Vocab, D), one("output_norm.weight", D)}
	if s.Untied {
		out = append(out, mat("output.weight", s.Vocab, D))
	}
	if s.OrigContext > 0 {
		half := cmp.Or(s.RopeDim, s.HeadDim) / 2
		out = append(out,
			f32("rope_factors_short.weight", []int{half}, func() *loader.Tensor { return factors(rng, "rope_factors_short.weight", half, 1, 0.3) }),
			f32("rope_factors_long.weight", []int{half}, func() *loader.Tensor { return factors(rng, "rope_factors_long.weight", half, 1.5, 10) }))
	}
	router := func(name string, E int) *loader.Tensor {
		return f32(name, []int{E, D}, func() *loader.Tensor { return gauss(rng, name, 1/math.Sqrt(float64(D)), E, D) })
	}
	if s.Arch == "gemma4" {
		return append(out, gemma4Tensors(rng, s, mat)...)
	}
	for l := range s.Layers {
		n := func(f string) string { return fmt.Sprintf("blk.%d.%s.weight", l, f) }
		if s.Arch == "phi3" { // fused q/k/v, gate then up in ffn_up
			out = append(out,
				one(n("attn_norm"), D),
				mat(n("attn_qkv"), Q+2*KV, D),
				mat(n("attn_output"), D, Q),
				one(n("ffn_norm"), D),
				mat(n("ffn_up"), 2*F, D),
				mat(n("ffn_down"), D, F))
			continue
		}
		if s.hybrid() {
			out = append(out, hybridMixer(s, l, mat, f32, one, rng)...)
		} else {
			out = append(out,
				one(n("attn_norm"), D),
				mat(n("attn_q"), Q, D),
				mat(n("attn_k"), KV, D),
				mat(n("attn_v"), KV, D),
				mat(n("attn_output"), D, Q),
				one(n("ffn_norm"), D))
		}
		if s.Arch == "gemma3" {
			out = append(out, one(n("attn_q_norm"), s.HeadDim), one(n("attn_k_norm"), s.HeadDim),
				one(n("post_attention_norm"), D), one(n("post_ffw_norm"), D))
		}
		if s.Experts == 0 {
			out = append(out, mat(n("ffn_gate"), F, D), mat(n("ffn_up"), F, D), mat(n("ffn_down"), D, F))
			continue
		}
		if !s.hybrid() {
			out = append(out, one(n("attn_q_norm"), s.HeadDim), one(n("attn_k_norm"), s.HeadDim))
		}
		out = append(out,
			router(n("ffn_gate_inp"), s.Experts),
			mat(n("ffn_gate_exps"), s.Experts, F, D),
			mat(n("ffn_up_exps"), s.Experts, F, D),
			mat(n("ffn_down_exps"), s.Experts, D, F))
		if s.SharedFFN > 0 {
			Fs := s.SharedFFN
			name := n("ffn_gate_inp_shexp")
			out = append(out,
				f32(name, []int{D}, func() *loader.Tensor { return gauss(rng, name, 1/math.Sqrt(float64(D)), D) }),
				mat(n("ffn_gate_shexp"), Fs, D),
				mat(n("ffn_up_shexp"), Fs, D),
				mat(n("ffn_down_shexp"), D, Fs))
		}
	}
	return out
}

// gemma4Tensors are a gemma4 shape's tensors past token_embd and
// output_norm: the per-layer embeddings' table (in s.DType), projection
// (F32, as llama-quantize leaves it) and norm, the global layers' RoPE
// factors (a quarter of the pairs rotating: 1e30 stops the rest), and per
// layer gemma3's tensors at the layer's head dim (q alone on a layer that
// shares KV), its per-layer input's gate, projection and norm, and its
// output scale. The q and k norms are hd^-1/4, as real checkpoints carry
// the attention scale in them (the scores are q·k, unscaled).
func gemma4Tensors(rng *rand.Rand, s Shape, mat func(string, ...int) *loader.Tensor) []*loader.Tensor {
	D, P, L := s.Hidden, s.PerLayer, s.Layers
	half := s.GlobalHeadDim / 2
	freqs := make([]float32, half)
	for i := range freqs {
		freqs[i] = 1
		if i >= half/4 {
			freqs[i] = 1e30
		}
	}
	out := []*loader.Tensor{
		mat("per_layer_token_embd.weight", s.Vocab, L*P),
		gauss(rng, "per_layer_model_proj.weight", 1/math.Sqrt(float64(D)), L*P, D),
		ones("per_layer_proj_norm.weight", P),
		values("rope_freqs.weight", freqs),
	}
	for l := range L {
		n := func(f string) string { return fmt.Sprintf("blk.%d.%s.weight", l, f) }
		hd, F := s.headDim(l), s.ffn(l)
		qk := float32(math.Pow(float64(hd), -0.25))
		out = append(out,
			ones(n("attn_norm"), D),
			mat(n("attn_q"), s.Heads*hd, D),
			fill(n("attn_q_norm"), hd, qk))
		if !s.shared(l) {
			out = append(out,
				mat(n("attn_k"), s.KVHeads*hd, D),
				mat(n("attn_v"), s.KVHeads*hd, D),
				fill(n("attn_k_norm"), hd, qk))
		}
		out = append(out,
			mat(n("attn_output"), D, s.Heads*hd),
			ones(n("post_attention_norm"), D),
			ones(n("ffn_norm"), D),
			mat(n("ffn_gate"), F, D), mat(n("ffn_up"), F, D), mat(n("ffn_down"), D, F),
			ones(n("post_ffw_norm"), D),
			mat(n("inp_gate"), P, D),
			mat(n("proj"), D, P),
			ones(n("post_norm"), D),
			fill(n("layer_output_scale"), 1, 0.5))
	}
	return out
}

// hybridMixer is layer l's norms and token mixer in a Qwen3.5 shape: a
// Gated DeltaNet (llama.cpp's tensors, the README of testdata/qwen35) or
// gated attention with q/k norms (attn_q's rows per head: q, then its
// gate).
func hybridMixer(s Shape, l int, mat func(string, ...int) *loader.Tensor,
	f32 func(string, []int, func() *loader.Tensor) *loader.Tensor, one func(string, int) *loader.Tensor, rng *rand.Rand) []*loader.Tensor {
	n := func(f string) string { return fmt.Sprintf("blk.%d.%s.weight", l, f) }
	D := s.Hidden
	out := []*loader.Tensor{one(n("attn_norm"), D), one(n("post_attention_norm"), D)}
	if !s.linear(l) {
		Q, KV := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
		return append(out,
			mat(n("attn_q"), 2*Q, D),
			mat(n("attn_k"), KV, D),
			mat(n("attn_v"), KV, D),
			one(n("attn_q_norm"), s.HeadDim),
			one(n("attn_k_norm"), s.HeadDim),
			mat(n("attn_output"), D, Q))
	}
	S, nk, nv := s.LinearHeadDim, s.LinearKeyHeads, s.LinearValueHeads
	conv, inner := 2*S*nk+S*nv, S*nv
	convName, dt, a := n("ssm_conv1d"), fmt.Sprintf("blk.%d.ssm_dt.bias", l), fmt.Sprintf("blk.%d.ssm_a", l)
	return append(out,
		mat(n("attn_qkv"), conv, D),
		mat(n("attn_gate"), inner, D),
		f32(convName, []int{conv, 4}, func() *loader.Tensor { return gauss(rng, convName, 0.25, conv, 4) }),
		f32(dt, []int{nv}, func() *loader.Tensor { return gauss(rng, dt, 0.25, nv) }),
		f32(a, []int{nv}, func() *loader.Tensor { return decays(rng, a, nv) }),
		mat(n("ssm_beta"), nv, D),
		mat(n("ssm_alpha"), nv, D),
		one(n("ssm_norm"), S),
		mat(n("ssm_out"), D, inner))
}

// Bytes is the size of the weights a file of shape s holds, and of those a
// decode step reads: everything but the embedding (one row of it, or all
// as a tied head), the routed experts at the used count's share.
func (s Shape) Bytes() (all, perToken int64, err error) {
	for _, t := range tensors(s, false) {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		size, err := t.DType.Size(n)
		if err != nil {
			return 0, 0, fmt.Errorf("synth: %s: %w", t.Name, err)
		}
		b := int64(size)
		all += b
		switch {
		case t.Name == "token_embd.weight":
			perToken += b / int64(s.Vocab)
			if !s.Untied {
				perToken += b
			}
		case strings.HasSuffix(t.Name, "_exps.weight"):
			perToken += b / int64(s.Experts) * int64(s.ExpertsUsed)
		default:
			perToken += b
		}
	}
	return all, perToken, nil
}

// random is a matrix (the last dimension the rows' length) of random
// quants whose scales keep each output near unit size.
func random(rng *rand.Rand, dt loader.DType, name string, shape ...int) *loader.Tensor {
	n, cols := 1, shape[len(shape)-1]
	for _, x := range shape {
		n *= x
	}
	blockBytes, std := 18, 4.6 // Q4_0: (q-8) has a standard deviation of about 4.6
	if dt == loader.Q8_0 {
		blockBytes, std = 34, 73.9 // uniform int8
	}
	blocks := n / 32
	data := make([]byte, blocks*blockBytes)
	for i := 0; i+8 <= len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
	}
	scale := float32(1 / (std * math.Sqrt(float64(cols))))
	for b := range blocks {
		binary.LittleEndian.PutUint16(data[blockBytes*b:], loader.F32ToF16(scale*(0.75+0.5*rng.Float32())))
	}
	return &loader.Tensor{Name: name, DType: dt, Shape: shape, Data: data}
}

// gauss is an F32 tensor of normal values of standard deviation std.
func gauss(rng *rand.Rand, name string, std float64, shape ...int) *loader.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(rng.NormFloat64()*std)))
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: shape, Data: data}
}

// decays is a Gated DeltaNet's ssm_a: −exp(U(ln 0.005, ln 0.5)) per
// value head, as the tiny Qwen3.5 models have it.
func decays(rng *rand.Rand, name string, n int) *loader.Tensor {
	data := make([]byte, 4*n)
	lo, hi := math.Log(0.005), math.Log(0.5)
	for i := range n {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(-math.Exp(lo+(hi-lo)*rng.Float64()))))
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{n}, Data: data}
}

// factors is a LongRoPE factor set of n: from base rising by about span,
// as the real ones do (F32).
func factors(rng *rand.Rand, name string, n int, base, span float64) *loader.Tensor {
	data := make([]byte, 4*n)
	for i := range n {
		f := base + span*float64(i)/float64(max(n-1, 1)) + 0.05*span*rng.Float64()
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(f)))
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{n}, Data: data}
}

func ones(name string, n int) *loader.Tensor { return fill(name, n, 1) }

// fill is an F32 vector of n values v.
func fill(name string, n int, v float32) *loader.Tensor {
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = v
	}
	return values(name, vals)
}

// values is an F32 vector.
func values(name string, v []float32) *loader.Tensor {
	data := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(f))
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{len(v)}, Data: data}
}

// tokenizerMeta is base's tokenizer metadata with its vocabulary padded
// to vocab by filler tokens.
func tokenizerMeta(base string, vocab int) ([]loader.MetaKV, error) {
	g, err := loader.OpenGGUF(base)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	var meta []loader.MetaKV
	for _, kv := range g.MetaKVs() {
		switch {
		case kv.Key == "tokenizer.ggml.tokens":
			toks, ok := kv.Value.([]string)
			if !ok || len(toks) > vocab {
				return nil, fmt.Errorf("%s: tokenizer.ggml.tokens is %T of %d", base, kv.Value, len(toks))
			}
			have := make(map[string]bool, len(toks))
			for _, t := range toks {
				have[t] = true
			}
			out := append([]string(nil), toks...)
			for i := len(toks); i < vocab; i++ {
				t := fmt.Sprintf("[filler%06d]", i)
				if have[t] {
					return nil, fmt.Errorf("%s: filler token %q is in the vocabulary", base, t)
				}
				out = append(out, t)
			}
			meta = append(meta, loader.MetaKV{Key: kv.Key, Value: out})
		case kv.Key == "tokenizer.ggml.token_type":
			types, ok := kv.Value.([]int32)
			if !ok {
				return nil, fmt.Errorf("%s: tokenizer.ggml.token_type is %T", base, kv.Value)
			}
			out := append([]int32(nil), types...)
			for len(out) < vocab {
				out = append(out, 1) // normal
			}
			meta = append(meta, loader.MetaKV{Key: kv.Key, Value: out})
		case kv.Key == "tokenizer.ggml.scores": // a SentencePiece vocabulary's (gemma3)
			scores, ok := kv.Value.([]float32)
			if !ok {
				return nil, fmt.Errorf("%s: tokenizer.ggml.scores is %T", base, kv.Value)
			}
			out := append([]float32(nil), scores...)
			for len(out) < vocab {
				out = append(out, -1e4) // fillers: never in a text, never preferred
			}
			meta = append(meta, loader.MetaKV{Key: kv.Key, Value: out})
		case strings.HasPrefix(kv.Key, "tokenizer."), kv.Key == "general.alignment":
			meta = append(meta, kv)
		}
	}
	return meta, nil
}

// Config is the model.Config a file of shape s loads as (model.FromGGUF),
// for what needs a shape's sizes without writing it (the bench's KV and
// state tables). TestShapeConfig holds it to what the loader reads.
func (s Shape) Config() model.Config {
	c := model.Config{Arch: s.Arch, Vocab: s.Vocab, Hidden: s.Hidden, Layers: s.Layers, Heads: s.Heads, KVHeads: s.KVHeads,
		HeadDim: s.HeadDim, FFN: s.FFN, RMSEps: float64(float32(1e-5)), RopeTheta: 500000, MaxContext: cmp.Or(s.Context, 8192),
		TiedEmbeddings: !s.Untied}
	if s.Experts > 0 {
		c.FFN, c.Experts, c.ExpertsUsed, c.ExpertFFN, c.NormTopK = 0, s.Experts, s.ExpertsUsed, s.FFN, true
	}
	switch s.Arch {
	case "qwen3", "qwen3moe":
		c.QKNorm, c.RopeNeoX = true, true
	case "qwen35", "qwen35moe":
		c.QKNorm, c.RopeNeoX, c.AttnOutputGate = true, true, true
		if s.RopeDim != s.HeadDim {
			c.RopeDim = s.RopeDim
		}
		c.RopeSections = []int{11, 11, 10, 0}
		c.LinearConvKernel, c.LinearKeyHeads, c.LinearValueHeads, c.LinearHeadDim = 4, s.LinearKeyHeads, s.LinearValueHeads, s.LinearHeadDim
		c.SharedExpertFFN = s.SharedFFN
		c.LayerTypes = make([]string, s.Layers)
		for l := range c.LayerTypes {
			c.LayerTypes[l] = model.LayerFullAttention
			if s.linear(l) {
				c.LayerTypes[l] = model.LayerLinearAttention
			}
		}
	}
	return c
}
