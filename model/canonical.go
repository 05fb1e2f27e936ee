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
	// Gemma 4's per-layer embeddings: the table, the projection of the
	// embedding, its norm (P values tiled L times)
	NamePLEmbed = "per_layer_token_embd.weight" // (V, L*P)
	NamePLProj  = "per_layer_model_proj.weight" // (L*P, D)
	NamePLNorm  = "per_layer_proj_norm.weight"  // (L*P)
)

// Per-layer canonical names; format with the layer index.
const (
	NameAttnNorm = "blk.%d.attn_norm.weight"   // (D)
	NameQKV      = "blk.%d.attn_qkv.weight"    // ((H+2Hk)*Dh, D)
	NameQKVBias  = "blk.%d.attn_qkv.bias"      // ((H+2Hk)*Dh) f32, q, k, v biases as NameQKV's rows; only when Config.QKVBias
	NameQNorm    = "blk.%d.attn_q_norm.weight" // (Dh)
	NameKNorm    = "blk.%d.attn_k_norm.weight" // (Dh)
	NameAttnOut  = "blk.%d.attn_output.weight" // (D, H*Dh)
	NameFFNNorm  = "blk.%d.ffn_norm.weight"    // (D)
	// the sandwich norms (Gemma): each mixer's output RMS-normalised
	// before its residual add
	NamePostAttnNorm = "blk.%d.post_attention_norm.weight" // (D)
	NamePostFFNNorm  = "blk.%d.post_ffw_norm.weight"       // (D)
	// Gemma 4: q, k, v per-head norm weights merged (q's with the
	// attention scale folded in, v's ones), the per-layer input, the
	// layer's output scale
	NameQKVNorm    = "blk.%d.attn_qkv_norm.weight"      // ((H+2Hk)*Dh), or (H*Dh) for a layer sharing KV
	NamePLGate     = "blk.%d.inp_gate.weight"           // (P, D)
	NamePLOut      = "blk.%d.proj.weight"               // (D, P)
	NamePLPostNorm = "blk.%d.post_norm.weight"          // (D)
	NameLayerScale = "blk.%d.layer_output_scale.weight" // (1)
	NameGateUp     = "blk.%d.ffn_gate_up.weight"        // (2F, D)
	NameDown       = "blk.%d.ffn_down.weight"           // (D, F)
	NameRouter     = "blk.%d.ffn_gate_inp.weight"       // (E, D)
	NameGateUpExps = "blk.%d.ffn_gate_up_exps.weight"   // (E, 2F, D)
	NameDownExps   = "blk.%d.ffn_down_exps.weight"      // (E, D, F)
	// Gemma 4's MoE beside its dense MLP (ChannelGeGLUMoE): the experts'
	// pre-norm, the router's input weight (ffn_gate_inp.scale/sqrt(D)),
	// each expert's output scale, the post-norms of the dense and the
	// routed branch (NamePostFFNNorm norms their sum)
	NamePreFFNNorm2  = "blk.%d.pre_ffw_norm_2.weight"  // (D)
	NameRouterNorm   = "blk.%d.ffn_gate_inp.scale"     // (D) f32
	NameExpertScale  = "blk.%d.ffn_down_exps.scale"    // (E) f32
	NamePostFFNNorm1 = "blk.%d.post_ffw_norm_1.weight" // (D)
	NamePostFFNNorm2 = "blk.%d.post_ffw_norm_2.weight" // (D)
	// the MoE's shared expert (qwen35moe)
	NameGateUpShexp = "blk.%d.ffn_gate_up_shexp.weight"  // (2Fs, D)
	NameDownShexp   = "blk.%d.ffn_down_shexp.weight"     // (D, Fs)
	NameGateShexp   = "blk.%d.ffn_gate_inp_shexp.weight" // (D) its sigmoid gate's weights
	// the Gated DeltaNet token mixer (qwen35); its pre-norm is NameAttnNorm
	NameSSMIn     = "blk.%d.ssm_in.weight"     // (ConvDim+Inner+2n_v, D): rows [q k v (the conv's channels) | z | beta | alpha]
	NameSSMConv   = "blk.%d.ssm_conv1d.weight" // (ConvDim, K) the depthwise causal conv
	NameSSMA      = "blk.%d.ssm_a"             // (n_v) -exp(A_log), per value head
	NameSSMDtBias = "blk.%d.ssm_dt.bias"       // (n_v)
	NameSSMNorm   = "blk.%d.ssm_norm.weight"   // (S) the gated RMSNorm's weight
	NameSSMOut    = "blk.%d.ssm_out.weight"    // (D, Inner)
)

// OnHost reports whether Build reads tensor name on the host rather than
// uploading it (the frequency divisors: rope_freqs, LongRoPE's factors;
// Gemma 4's layer output scales), so a loader keeps its bytes in memory.
func OnHost(name string) bool {
	if name == NameRopeFreqs || name == NameRopeFactorsShort || name == NameRopeFactorsLong {
		return true
	}
	var l int
	_, err := fmt.Sscanf(name, NameLayerScale, &l)
	return err == nil && fmt.Sprintf(NameLayerScale, l) == name
}

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
		{NameRopeFactorsShort, longRoPE, ropeHalf},
		{NameRopeFactorsLong, longRoPE, ropeHalf},
		{NamePLEmbed, hasPerLayer, func(c *Config) []int { return []int{c.Vocab, c.Layers * c.PerLayerInput} }},
		{NamePLProj, hasPerLayer, func(c *Config) []int { return []int{c.Layers * c.PerLayerInput, c.Hidden} }},
		{NamePLNorm, hasPerLayer, func(c *Config) []int { return []int{c.Layers * c.PerLayerInput} }},
	}
	layerTensors = []layerTensor{
		// the token mixer's pre-norm
		{NameAttnNorm, nil, layerHidden},
		// the attention token mixer
		{NameQKV, attention, func(c *Config, sp *LayerSpec) []int { return []int{sp.Attention.qkvWidth(), c.Hidden} }},
		{NameQKVBias, func(sp *LayerSpec) bool { return sp.Attention.Bias }, func(_ *Config, sp *LayerSpec) []int { return []int{sp.Attention.qkvWidth()} }},
		{NameQNorm, qkNorm, headVector},
		{NameQKVNorm, func(sp *LayerSpec) bool { return attention(sp) && sp.Attention.NormQKV },
			func(_ *Config, sp *LayerSpec) []int { return []int{sp.Attention.qkvWidth()} }},
		{NameKNorm, qkNorm, headVector},
		{NameAttnOut, attention, func(c *Config, sp *LayerSpec) []int {
			return []int{c.Hidden, sp.Attention.Heads * sp.Attention.HeadDim}
		}},
		{NamePostAttnNorm, func(sp *LayerSpec) bool { return !sp.IsDeltaNet() && sp.Attention.PostNorm }, layerHidden},
		// the Gated DeltaNet token mixer
		{NameSSMIn, deltaNet, func(c *Config, sp *LayerSpec) []int { return []int{sp.DeltaNet.ProjWidth(), c.Hidden} }},
		{NameSSMConv, deltaNet, func(_ *Config, sp *LayerSpec) []int { return []int{sp.DeltaNet.ConvDim(), sp.DeltaNet.ConvKernel} }},
		{NameSSMA, deltaNet, func(_ *Config, sp *LayerSpec) []int { return []int{sp.DeltaNet.ValueHeads} }},
		{NameSSMDtBias, deltaNet, func(_ *Config, sp *LayerSpec) []int { return []int{sp.DeltaNet.ValueHeads} }},
		{NameSSMNorm, deltaNet, func(_ *Config, sp *LayerSpec) []int { return []int{sp.DeltaNet.HeadDim} }},
		{NameSSMOut, deltaNet, func(c *Config, sp *LayerSpec) []int { return []int{c.Hidden, sp.DeltaNet.Inner()} }},
		// the channel mixer: MoE or gated MLP
		{NameFFNNorm, nil, layerHidden},
		{NameRouter, moe, func(c *Config, sp *LayerSpec) []int { return []int{sp.Channel.Experts, c.Hidden} }},
		{NameGateUpExps, moe, func(c *Config, sp *LayerSpec) []int {
			return []int{sp.Channel.Experts, 2 * sp.Channel.expertFFN(), c.Hidden}
		}},
		{NameDownExps, moe, func(c *Config, sp *LayerSpec) []int {
			return []int{sp.Channel.Experts, c.Hidden, sp.Channel.expertFFN()}
		}},
		{NamePreFFNNorm2, gemmaMoE, layerHidden},
		{NameRouterNorm, gemmaMoE, layerHidden},
		{NameExpertScale, gemmaMoE, func(_ *Config, sp *LayerSpec) []int { return []int{sp.Channel.Experts} }},
		{NamePostFFNNorm1, gemmaMoE, layerHidden},
		{NamePostFFNNorm2, gemmaMoE, layerHidden},
		{NameGateUpShexp, shared, func(c *Config, sp *LayerSpec) []int { return []int{2 * sp.Channel.SharedFFN, c.Hidden} }},
		{NameDownShexp, shared, func(c *Config, sp *LayerSpec) []int { return []int{c.Hidden, sp.Channel.SharedFFN} }},
		{NameGateShexp, shared, layerHidden},
		{NameGateUp, gated, func(c *Config, sp *LayerSpec) []int { return []int{2 * sp.Channel.FFN, c.Hidden} }},
		{NameDown, gated, func(c *Config, sp *LayerSpec) []int { return []int{c.Hidden, sp.Channel.FFN} }},
		{NamePostFFNNorm, func(sp *LayerSpec) bool { return sp.Channel.PostNorm }, layerHidden},
		// the per-layer input (Gemma 4) and the layer's output scale
		{NamePLGate, perLayer, func(c *Config, _ *LayerSpec) []int { return []int{c.PerLayerInput, c.Hidden} }},
		{NamePLOut, perLayer, func(c *Config, _ *LayerSpec) []int { return []int{c.Hidden, c.PerLayerInput} }},
		{NamePLPostNorm, perLayer, layerHidden},
		{NameLayerScale, func(sp *LayerSpec) bool { return sp.OutScale }, func(*Config, *LayerSpec) []int { return []int{1} }},
	}
	tailTensors = []canonicalTensor{
		{NameNorm, nil, hiddenVector},
		{NameLMHead, func(c *Config) bool { return !c.TiedEmbeddings }, func(c *Config) []int { return []int{c.Vocab, c.Hidden} }},
	}
)

func perLayer(sp *LayerSpec) bool  { return sp.PerLayer }
func hasPerLayer(c *Config) bool   { return c.PerLayerInput > 0 }
func qkNorm(sp *LayerSpec) bool    { return !sp.IsDeltaNet() && sp.Attention.QKNorm }
func attention(sp *LayerSpec) bool { return !sp.IsDeltaNet() }
func deltaNet(sp *LayerSpec) bool  { return sp.IsDeltaNet() }
func shared(sp *LayerSpec) bool    { return sp.Channel.Kind == ChannelMoE && sp.Channel.SharedFFN > 0 }
func moe(sp *LayerSpec) bool       { return sp.Channel.Kind == ChannelMoE || gemmaMoE(sp) }
func gemmaMoE(sp *LayerSpec) bool  { return sp.Channel.Kind == ChannelGeGLUMoE }

// gated reports whether the layer has a dense gated MLP (beside experts,
// for Gemma 4's MoE).
func gated(sp *LayerSpec) bool {
	k := sp.Channel.Kind
	return k == ChannelGatedMLP || k == ChannelGeGLU || k == ChannelGeGLUMoE
}

// expertFFN is each expert's intermediate size.
func (ch *ChannelSpec) expertFFN() int {
	if ch.ExpertFFN > 0 {
		return ch.ExpertFFN
	}
	return ch.FFN
}
func hiddenVector(c *Config) []int              { return []int{c.Hidden} }
func layerHidden(c *Config, _ *LayerSpec) []int { return []int{c.Hidden} }
func headVector(_ *Config, sp *LayerSpec) []int { return []int{sp.Attention.HeadDim} }

// qkvWidth is the merged projection's rows: q, k, v, then the output
// gate's H·Dh rows when the layer has one.
func (a *AttentionSpec) qkvWidth() int {
	w := (a.Heads + 2*a.KVHeads) * a.HeadDim
	if a.SharesKV {
		w = a.Heads * a.HeadDim
	}
	if a.OutputGate {
		w += a.Heads * a.HeadDim
	}
	return w
}

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
		for l, sp := range c.mtpLayers() {
			for _, set := range [][]layerTensor{layerTensors, mtpTensors} {
				for i := range set {
					if t := &set[i]; t.in(&sp) && !yield(fmt.Sprintf(t.name, l), t.shape(c, &sp)) {
						return
					}
				}
			}
		}
		each(tailTensors)
	}
}

// mtpLayers yields the index and spec of each NextN/MTP block the
// weights hold: layers Layers, Layers+1, ...
func (c *Config) mtpLayers() iter.Seq2[int, LayerSpec] {
	return func(yield func(int, LayerSpec) bool) {
		for i := range c.MTPLayers {
			if !yield(c.Layers+i, c.MTPSpec()) {
				return
			}
		}
	}
}

// TensorNames lists every canonical tensor name a model of config c may
// hold, in forward-pass order: the embedding, rope_freqs, each layer's
// tensors (the NextN/MTP blocks' after the trunk's), the final norm and
// the output head. rope_freqs is optional, and
// output.weight is listed only when the embeddings are untied.
func (c *Config) TensorNames() []string {
	var names []string
	for name := range c.tensors() {
		names = append(names, name)
	}
	return names
}
