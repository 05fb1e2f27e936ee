// Package synth writes GGUF models with random weights in the shapes of
// real ones (Llama-3.2-1B, DeepSeek-R1-Distill-Llama-70B, Qwen3-30B-A3B,
// Phi-4-mini, Gemma-3-1B, Gemma-4-E2B),
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
)

// Shape is a model's architecture and dimensions.
type Shape struct {
	Name string // what it has the shape of, for general.name
	// Arch is "llama", "qwen3moe" (q/k norms and routed experts, FFN
	// being one expert's), "phi3" (fused attn_qkv and gate/up in ffn_up,
	// partial rotary over RopeDim dims, LongRoPE factors from
	// OrigContext of Context positions), "gemma3" (q/k norms, sandwich
	// norms, local layers of Window positions, five of every six) or
	// "gemma4" (gemma3's layers, local heads of HeadDim and global ones of
	// GlobalHeadDim, every Period-th layer global, the last SharedKV
	// layers reusing earlier KV with twice the FFN, per-layer embeddings
	// of PerLayer, soft-capped logits).
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
}

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
	err = loader.WriteGGUF(w, 3, meta, tensors(s))
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
	if a == "llama" || a == "phi3" {
		meta = append(meta, loader.MetaKV{Key: a + ".rope.dimension_count", Value: u(cmp.Or(s.RopeDim, s.HeadDim))})
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
// F32 router.
func tensors(s Shape) []*loader.Tensor {
	rng := rand.New(rand.NewPCG(1, uint64(s.Layers)))
	mat := func(name string, shape ...int) *loader.Tensor {
		dt := s.DType
		if s.Mix == MixQ4KM {
			dt = q4KMType(name, s.Layers, !s.Untied)
		}
		if dt.BlockElems() == 256 {
			return randomK(rng, dt, name, shape...)
		}
		return random(rng, dt, name, shape...)
	}
	D, Q, KV, F := s.Hidden, s.Heads*s.HeadDim, s.KVHeads*s.HeadDim, s.FFN
	out := []*loader.Tensor{mat("token_embd.weight", s.Vocab, D), ones("output_norm.weight", D)}
	if s.Untied {
		out = append(out, mat("output.weight", s.Vocab, D))
	}
	if s.OrigContext > 0 {
		half := cmp.Or(s.RopeDim, s.HeadDim) / 2
		out = append(out, factors(rng, "rope_factors_short.weight", half, 1, 0.3),
			factors(rng, "rope_factors_long.weight", half, 1.5, 10))
	}
	if s.Arch == "gemma4" {
		return append(out, gemma4Tensors(rng, s, mat)...)
	}
	for l := range s.Layers {
		n := func(f string) string { return fmt.Sprintf("blk.%d.%s.weight", l, f) }
		if s.Arch == "phi3" { // fused q/k/v, gate then up in ffn_up
			out = append(out,
				ones(n("attn_norm"), D),
				mat(n("attn_qkv"), Q+2*KV, D),
				mat(n("attn_output"), D, Q),
				ones(n("ffn_norm"), D),
				mat(n("ffn_up"), 2*F, D),
				mat(n("ffn_down"), D, F))
			continue
		}
		out = append(out,
			ones(n("attn_norm"), D),
			mat(n("attn_q"), Q, D),
			mat(n("attn_k"), KV, D),
			mat(n("attn_v"), KV, D),
			mat(n("attn_output"), D, Q),
			ones(n("ffn_norm"), D))
		if s.Arch == "gemma3" {
			out = append(out, ones(n("attn_q_norm"), s.HeadDim), ones(n("attn_k_norm"), s.HeadDim),
				ones(n("post_attention_norm"), D), ones(n("post_ffw_norm"), D))
		}
		if s.Experts == 0 {
			out = append(out, mat(n("ffn_gate"), F, D), mat(n("ffn_up"), F, D), mat(n("ffn_down"), D, F))
			continue
		}
		out = append(out,
			ones(n("attn_q_norm"), s.HeadDim),
			ones(n("attn_k_norm"), s.HeadDim),
			router(rng, n("ffn_gate_inp"), s.Experts, D),
			mat(n("ffn_gate_exps"), s.Experts, F, D),
			mat(n("ffn_up_exps"), s.Experts, F, D),
			mat(n("ffn_down_exps"), s.Experts, D, F))
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
		router(rng, "per_layer_model_proj.weight", L*P, D),
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

// router is an F32 (E, D) router whose logits are about unit size.
func router(rng *rand.Rand, name string, E, D int) *loader.Tensor {
	data := make([]byte, 4*E*D)
	scale := 1 / math.Sqrt(float64(D))
	for i := range E * D {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(rng.NormFloat64()*scale)))
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{E, D}, Data: data}
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
