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

// The canonical set in forward-pass order: headTensors, each layer's
// layerTensors (their names take the layer index), tailTensors.
var (
	headTensors = []canonicalTensor{
		{NameEmbed, nil, func(c *Config) []int { return []int{c.Vocab, c.Hidden} }},
		{NameRopeFreqs, nil, nil},
	}
	layerTensors = []canonicalTensor{
		{NameAttnNorm, nil, hiddenVector},
		{NameQKV, nil, func(c *Config) []int { return []int{(c.Heads + 2*c.KVHeads) * c.HeadDim, c.Hidden} }},
		{NameQKVBias, func(c *Config) bool { return c.QKVBias }, func(c *Config) []int { return []int{(c.Heads + 2*c.KVHeads) * c.HeadDim} }},
		{NameQNorm, qkNorm, headVector},
		{NameKNorm, qkNorm, headVector},
		{NameAttnOut, nil, func(c *Config) []int { return []int{c.Hidden, c.Heads * c.HeadDim} }},
		{NameFFNNorm, nil, hiddenVector},
		{NameRouter, (*Config).MoE, func(c *Config) []int { return []int{c.Experts, c.Hidden} }},
		{NameGateUpExps, (*Config).MoE, func(c *Config) []int { return []int{c.Experts, 2 * c.ExpertFFN, c.Hidden} }},
		{NameDownExps, (*Config).MoE, func(c *Config) []int { return []int{c.Experts, c.Hidden, c.ExpertFFN} }},
		{NameGateUp, dense, func(c *Config) []int { return []int{2 * c.FFN, c.Hidden} }},
		{NameDown, dense, func(c *Config) []int { return []int{c.Hidden, c.FFN} }},
	}
	tailTensors = []canonicalTensor{
		{NameNorm, nil, hiddenVector},
		{NameLMHead, func(c *Config) bool { return !c.TiedEmbeddings }, func(c *Config) []int { return []int{c.Vocab, c.Hidden} }},
	}
)

func qkNorm(c *Config) bool        { return c.QKNorm }
func dense(c *Config) bool         { return !c.MoE() }
func hiddenVector(c *Config) []int { return []int{c.Hidden} }
func headVector(c *Config) []int   { return []int{c.HeadDim} }

// tensors yields the name and entry of every canonical tensor a model of
// config c may hold, in forward-pass order.
func (c *Config) tensors() iter.Seq2[string, *canonicalTensor] {
	return func(yield func(string, *canonicalTensor) bool) {
		each := func(set []canonicalTensor, name func(string) string) bool {
			for i := range set {
				if t := &set[i]; t.in(c) && !yield(name(t.name), t) {
					return false
				}
			}
			return true
		}
		global := func(s string) string { return s }
		if !each(headTensors, global) {
			return
		}
		for l := 0; l < c.Layers; l++ {
			if !each(layerTensors, func(s string) string { return fmt.Sprintf(s, l) }) {
				return
			}
		}
		each(tailTensors, global)
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
