package model

// Layer is one block: a token mixer, then a channel mixer, each reading the
// residual stream through its own norm and adding its output back into it.
type Layer struct {
	Mixer   TokenMixer
	Channel ChannelMixer
	// Post is what follows the channel mixer (Gemma 4's per-layer input
	// and output scale); nil: nothing.
	Post *PerLayerInput
}

// TokenMixer is a layer's mixing across positions (attention, Gated
// DeltaNet). Its kinds are the types of this package that implement it.
type TokenMixer interface {
	// mix runs the mixer of layer l on the residual stream f.s.res, in place.
	mix(f *pass, l int)
}

// ChannelMixer is a layer's mixing across features (the MLP). Its kinds are
// the types of this package that implement it.
type ChannelMixer interface {
	// mix runs the mixer on the residual stream f.s.res, in place.
	mix(f *pass)
}

// pass is what the layers of one Forward share.
type pass struct {
	b     Backend
	s     *scratch
	cache KVCache      // the attention layers' cache
	kv    []KVCache    // the caches of the KV groups (Attention.Group): cache alone, or a GroupedCache's
	kv1   [1]KVCache   // kv's storage for one group
	rec   *HybridCache // the recurrent states; nil without Gated DeltaNet layers
	eps   float32
	long  bool // LongRoPE's long factors (Attention.LongRope)
}

// useCache sets the attention layers' cache (a backend's, or a
// GroupedCache: one per KV group).
func (f *pass) useCache(cache KVCache) {
	f.cache, f.kv1[0], f.kv = cache, cache, f.kv1[:]
	if g, ok := cache.(*GroupedCache); ok {
		f.kv = g.Groups
	}
}

// Attention is the attention token mixer: vLLM's LlamaAttention with GQA,
// merged QKV, RoPE and a KV cache, with the optional parts its spec names.
type Attention struct {
	Norm  Tensor // (D) the pre-norm
	QKV   Tensor // ((H+2Hk)*Dh, D)
	Bias  Tensor // ((H+2Hk)*Dh) f32; nil unless Spec.Bias
	QNorm Tensor // (Dh); nil unless Spec.QKNorm
	KNorm Tensor // (Dh)
	Out   Tensor // (D, H*Dh)
	// PostNorm (D) RMS-normalises the output projection's result before
	// the residual add (Spec.PostNorm, Gemma's sandwich norm); nil: none.
	PostNorm Tensor
	Rope     *RoPE
	// LongRope is LongRoPE's rotation with the long factors (Rope has the
	// short ones); nil without LongRoPE. Model.LongRoPE says which a pass
	// uses.
	LongRope *RoPE
	// QKVNorm ((H+2Hk)*Dh, or H*Dh sharing KV) is the per-head q/k/v norm
	// weight applied in QKV's epilogue (Spec.NormQKV, Gemma 4); nil: none.
	QKVNorm Tensor
	Spec    AttentionSpec
	// KVLayer is the layer's index in its KV group's cache (Group), which
	// holds the attention layers only; a layer that shares KV has its
	// source's.
	KVLayer int
	Group   int
}

// mix: res += o_proj(attention(RoPE(qkv(RMSNorm(res))))), four ops. With
// an output gate, QKV's rows are [q | k | v | gate] and Attend applies it;
// a layer that shares KV computes q alone and writes nothing.
func (a *Attention) mix(f *pass, _ int) {
	b, s, sp := f.b, f.s, &a.Spec
	cache := f.kv[a.Group]
	qkv, attn := s.widthOf(widthQKV, s.qkv, sp.qkvWidth()), s.widthOf(widthAttn, s.attn, sp.Heads*sp.HeadDim)
	kvHeads := sp.KVHeads
	if sp.SharesKV {
		kvHeads = 0
	}
	rope := a.Rope
	if f.long && a.LongRope != nil {
		rope = a.LongRope
	}
	b.MatMul(qkv, s.res, a.QKV, MatMulFusion{Norm: a.Norm, Eps: f.eps, PostNorm: a.QKVNorm, PostNormGroup: sp.HeadDim})
	b.RoPEKV(qkv, s.pos, a.Bias, a.QNorm, a.KNorm, sp.Heads+kvHeads, kvHeads, f.eps, rope, cache, a.KVLayer)
	b.Attend(attn, qkv, s.pos, cache, a.KVLayer, sp.Window, sp.OutputGate)
	b.MatMul(s.res, attn, a.Out, MatMulFusion{Add: true, PostNorm: a.PostNorm, Eps: f.eps})
}

// DeltaNet is the Gated DeltaNet token mixer (Qwen3.5's linear
// attention): the merged input projection, the recurrence on the
// sequence's states (Backend.DeltaNet), the output projection.
type DeltaNet struct {
	Norm   Tensor // (D) the pre-norm
	In     Tensor // (ProjWidth, D): [q k v | z | beta | alpha]
	Conv   Tensor // (ConvDim, K)
	A      Tensor // (n_v)
	DtBias Tensor // (n_v)
	GNorm  Tensor // (S) the gated RMSNorm's weight
	Out    Tensor // (D, n_v·S)
	Spec   DeltaNetSpec
	// Slot is the layer's index among the linear layers: its states in
	// the HybridCache.
	Slot int
}

// mix: res += out_proj(DeltaNet(in_proj(RMSNorm(res)))), three ops.
func (d *DeltaNet) mix(f *pass, _ int) {
	b, s := f.b, f.s
	b.MatMul(s.proj, s.res, d.In, MatMulFusion{Norm: d.Norm, Eps: f.eps})
	b.DeltaNet(s.dn, s.proj, d.Conv, d.A, d.DtBias, d.GNorm, f.rec.Conv[d.Slot], f.rec.State[d.Slot], d.Spec, f.eps)
	b.MatMul(s.res, s.dn, d.Out, MatMulFusion{Add: true})
}

// GatedMLP is the gated MLP channel mixer: vLLM's LlamaMLP (merged gate_up,
// SiluAndMul, down), or with GeGLU Gemma's (GELU-tanh instead of SiLU),
// with a post-norm before the add when PostNorm is set.
type GatedMLP struct {
	Norm     Tensor // (D) the pre-norm
	GateUp   Tensor // (2F, D)
	Down     Tensor // (D, F)
	GeGLU    bool   // gelu_tanh(gate)·up (ChannelGeGLU), not silu(gate)·up
	PostNorm Tensor // (D) the down projection's post-norm; nil: none
}

// mix: res += down(SiluAndMul(gate_up(RMSNorm(res)))), two ops.
func (m *GatedMLP) mix(f *pass) {
	b, s := f.b, f.s
	act := s.widthOf(widthAct, s.act, m.Down.Shape()[1])
	b.MatMul(act, s.res, m.GateUp, MatMulFusion{Norm: m.Norm, Eps: f.eps, SiluMul: !m.GeGLU, GeluMul: m.GeGLU})
	b.MatMul(s.res, act, m.Down, MatMulFusion{Add: true, PostNorm: m.PostNorm, Eps: f.eps})
}

// PerLayerInput is the end of a Gemma 4 layer: its gated per-layer input,
// then the output scale.
type PerLayerInput struct {
	Gate     Tensor  // (P, D) inp_gate; nil: no per-layer input
	Out      Tensor  // (D, P) proj
	PostNorm Tensor  // (D) post_norm
	Scale    float32 // layer_output_scale; 0: none
}

// mix: res += RMSNorm(proj(gelu_tanh(inp_gate(res)) · ple[l]))·post_norm,
// then res *= Scale: four ops.
func (p *PerLayerInput) mix(f *pass, l int) {
	b, s := f.b, f.s
	if p.Gate != nil {
		P := p.Gate.Shape()[0]
		b.MatMul(s.pleGate, s.res, p.Gate, MatMulFusion{})
		b.GeluGate(s.pleAct, s.pleGate, s.ple, l*P)
		b.MatMul(s.res, s.pleAct, p.Out, MatMulFusion{Add: true, PostNorm: p.PostNorm, Eps: f.eps})
	}
	if p.Scale != 0 {
		b.Scale(s.res, p.Scale)
	}
}

// MoE is the sparse channel mixer: Qwen3-MoE's router, the top-A of E
// experts (each a gated MLP), and Qwen3.5-MoE's shared expert when Shared
// has weights.
type MoE struct {
	Norm   Tensor // (D) the pre-norm
	Router Tensor // (E, D)
	GateUp Tensor // (E, 2F, D)
	Down   Tensor // (E, D, F)
	Shared SharedExpert
	Spec   ChannelSpec
}

// mix: res += MoE(RMSNorm(res)), one op.
func (m *MoE) mix(f *pass) {
	f.b.MoE(f.s.res, m.Norm, f.eps, m.Router, m.GateUp, m.Down, m.Spec.ExpertsUsed, m.Spec.NormTopK, MoEFusion{Shared: m.Shared})
}

// GemmaMoE is Gemma 4 26B-A4B's channel mixer (ChannelGeGLUMoE): the
// dense GeGLU (MLP, its down projection post-normed with
// post_ffw_norm_1) and the routed GeGLU experts (MoE, pre-normed with
// pre_ffw_norm_2, post-normed with post_ffw_norm_2) side by side, their
// sum RMS-normed with post_ffw_norm (PostNorm) before the residual add.
type GemmaMoE struct {
	MLP GatedMLP // Norm ffn_norm, PostNorm post_ffw_norm_1
	MoE MoE      // Norm pre_ffw_norm_2
	// RouterNorm (D) f32 is the router's input weight,
	// ffn_gate_inp.scale/sqrt(D); ExpertScale (E) f32 ffn_down_exps.scale;
	// PostNorm2 (D) post_ffw_norm_2.
	RouterNorm, ExpertScale, PostNorm2 Tensor
	PostNorm                           Tensor // (D) post_ffw_norm
}

// mix: branches = RMSNorm(down(GeGLU(gate_up(RMSNorm(res)))))·pf1 +
// RMSNorm(MoE(res))·pf2; res += RMSNorm(branches)·pf: four ops.
func (g *GemmaMoE) mix(f *pass) {
	b, s, m := f.b, f.s, &g.MLP
	act := s.widthOf(widthAct, s.act, m.Down.Shape()[1])
	b.MatMul(act, s.res, m.GateUp, MatMulFusion{Norm: m.Norm, Eps: f.eps, GeluMul: true})
	b.MatMul(s.ffn, act, m.Down, MatMulFusion{PostNorm: m.PostNorm, Eps: f.eps})
	e := &g.MoE
	b.MoE(s.res, e.Norm, f.eps, e.Router, e.GateUp, e.Down, e.Spec.ExpertsUsed, e.Spec.NormTopK,
		MoEFusion{GeluMul: true, RouterNorm: g.RouterNorm, ExpertScale: g.ExpertScale, PostNorm: g.PostNorm2, Out: s.ffn})
	b.AddNorm(s.res, s.ffn, g.PostNorm, f.eps)
}
