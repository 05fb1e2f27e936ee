package model

import (
	"fmt"
	"iter"
)

// Canonical tensor names. Every source (GGUF, Hugging Face, llama2.c,
// converted manifests) is mapped onto these, with Q/K/V and gate/up merged
// as the forward pass reads them.
const (
	NameEmbed     = "token_embd.weight"  // (V, D)
	NameNorm      = "output_norm.weight" // (D)
	NameLMHead    = "output.weight"      // (V, D); absent when tied
	NameRopeFreqs = "rope_freqs.weight"  // (Dh/2) optional llama3 frequency divisors
)

// Per-layer canonical names; format with the layer index.
const (
	NameAttnNorm   = "blk.%d.attn_norm.weight"        // (D)
	NameQKV        = "blk.%d.attn_qkv.weight"         // ((H+2Hk)*Dh, D)
	NameQKVBias    = "blk.%d.attn_qkv.bias"           // ((H+2Hk)*Dh) f32, q, k, v biases as NameQKV's rows; only when Config.QKVBias
	NameQNorm      = "blk.%d.attn_q_norm.weight"      // (Dh)
	NameKNorm      = "blk.%d.attn_k_norm.weight"      // (Dh)
	NameAttnOut    = "blk.%d.attn_output.weight"      // (D, H*Dh)
	NameFFNNorm    = "blk.%d.ffn_norm.weight"         // (D)
	NameGateUp     = "blk.%d.ffn_gate_up.weight"      // (2F, D)
	NameDown       = "blk.%d.ffn_down.weight"         // (D, F)
	NameRouter     = "blk.%d.ffn_gate_inp.weight"     // (E, D)
	NameGateUpExps = "blk.%d.ffn_gate_up_exps.weight" // (E, 2F, D)
	NameDownExps   = "blk.%d.ffn_down_exps.weight"    // (E, D, F)
)

// canonicalTensor is one tensor of the canonical set.
type canonicalTensor struct {
	name string // a Name* constant
	// has reports whether a model of config c has the tensor; nil: every
	// model.
	has func(c *Config) bool
	// shape is the tensor's shape; nil for rope_freqs, which a model may
	// have or not and which is checked by its element count.
	shape func(c *Config) []int
}

// in reports whether a model of config c has (or, for rope_freqs, may
// have) t.
func (t *canonicalTensor) in(c *Config) bool { return t.has == nil || t.has(c) }

// layerTensor is one tensor of a layer, which its spec (its kinds and
// their parameters) says it has or not, and of which shape.
type layerTensor struct {
	name  string // a per-layer Name* constant
	has   func(sp *LayerSpec) bool
	shape func(c *Config, sp *LayerSpec) []int
}

func (t *layerTensor) in(sp *LayerSpec) bool { return t.has == nil || t.has(sp) }

// The canonical set in forward-pass order: headTensors, each layer's
// layerTensors (their names take the layer index), tailTensors.
var (
	headTensors = []canonicalTensor{
		{NameEmbed, nil, func(c *Config) []int { return []int{c.Vocab, c.Hidden} }},
		{NameRopeFreqs, nil, nil},
	}
	layerTensors = []layerTensor{
		// the attention token mixer
		{NameAttnNorm, nil, layerHidden},
		{NameQKV, nil, func(c *Config, sp *LayerSpec) []int { return []int{sp.Attention.qkvWidth(), c.Hidden} }},
		{NameQKVBias, func(sp *LayerSpec) bool { return sp.Attention.Bias }, func(_ *Config, sp *LayerSpec) []int { return []int{sp.Attention.qkvWidth()} }},
		{NameQNorm, qkNorm, headVector},
		{NameKNorm, qkNorm, headVector},
		{NameAttnOut, nil, func(c *Config, sp *LayerSpec) []int {
			return []int{c.Hidden, sp.Attention.Heads * sp.Attention.HeadDim}
		}},
		// the channel mixer: MoE or gated MLP
		{NameFFNNorm, nil, layerHidden},
		{NameRouter, moe, func(c *Config, sp *LayerSpec) []int { return []int{sp.Channel.Experts, c.Hidden} }},
		{NameGateUpExps, moe, func(c *Config, sp *LayerSpec) []int { return []int{sp.Channel.Experts, 2 * sp.Channel.FFN, c.Hidden} }},
		{NameDownExps, moe, func(c *Config, sp *LayerSpec) []int { return []int{sp.Channel.Experts, c.Hidden, sp.Channel.FFN} }},
		{NameGateUp, gated, func(c *Config, sp *LayerSpec) []int { return []int{2 * sp.Channel.FFN, c.Hidden} }},
		{NameDown, gated, func(c *Config, sp *LayerSpec) []int { return []int{c.Hidden, sp.Channel.FFN} }},
	}
	tailTensors = []canonicalTensor{
		{NameNorm, nil, hiddenVector},
		{NameLMHead, func(c *Config) bool { return !c.TiedEmbeddings }, func(c *Config) []int { return []int{c.Vocab, c.Hidden} }},
	}
)

func qkNorm(sp *LayerSpec) bool                 { return sp.Attention.QKNorm }
func moe(sp *LayerSpec) bool                    { return sp.Channel.Kind == ChannelMoE }
func gated(sp *LayerSpec) bool                  { return sp.Channel.Kind == ChannelGatedMLP }
func hiddenVector(c *Config) []int              { return []int{c.Hidden} }
func layerHidden(c *Config, _ *LayerSpec) []int { return []int{c.Hidden} }
func headVector(_ *Config, sp *LayerSpec) []int { return []int{sp.Attention.HeadDim} }
func (a *AttentionSpec) qkvWidth() int          { return (a.Heads + 2*a.KVHeads) * a.HeadDim }

// tensors yields the name and shape (nil for rope_freqs, optional and
// checked by its element count) of every canonical tensor a model of
// config c may hold, in forward-pass order.
func (c *Config) tensors() iter.Seq2[string, []int] {
	return func(yield func(string, []int) bool) {
		each := func(set []canonicalTensor) bool {
			for i := range set {
				t := &set[i]
				var shape []int
				if t.shape != nil {
					shape = t.shape(c)
				}
				if t.in(c) && !yield(t.name, shape) {
					return false
				}
			}
			return true
		}
		if !each(headTensors) {
			return
		}
		for l, sp := range c.Specs() {
			for i := range layerTensors {
				if t := &layerTensors[i]; t.in(&sp) && !yield(fmt.Sprintf(t.name, l), t.shape(c, &sp)) {
					return
				}
			}
		}
		each(tailTensors)
	}
}

// TensorNames lists every canonical tensor name a model of config c may
// hold, in forward-pass order: the embedding, rope_freqs, each layer's
// tensors, the final norm and the output head. rope_freqs is optional, and
// output.weight is listed only when the embeddings are untied.
func (c *Config) TensorNames() []string {
	var names []string
	for name := range c.tensors() {
		names = append(names, name)
	}
	return names
}
