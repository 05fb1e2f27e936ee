package model

import (
	"fmt"
	"math"
	"slices"

	"wasmllm/loader"
)

// Canonical names of gemma-embedding's dense projections (the GGUF's).
const (
	NameDense2 = "dense_2.weight" // (DenseDim, D)
	NameDense3 = "dense_3.weight" // (D, DenseDim)
)

// gemmaEmbeddingFromGGUF maps a gemma-embedding GGUF (EmbeddingGemma,
// llama.cpp's converter with or without --sentence-transformers-dense-
// modules) onto an EncoderConfig and its tensors: q/k/v merged into
// attn_qkv and gate/up into ffn_gate_up, the norms as stored (the
// converter's +1 already in them). Errors are *loader.FormatError naming
// the key or tensor, or *ConfigError.
func gemmaEmbeddingFromGGUF(g *loader.GGUF, arch string) (*EncoderWeights, error) {
	ferr := func(field string, err error) error {
		return &loader.FormatError{File: g.File, Field: field, Offset: -1, Err: err}
	}
	var err error
	req := func(key string, dst *int) {
		if err != nil {
			return
		}
		v, ok := g.Int(arch + "." + key)
		switch {
		case !ok:
			err = ferr("metadata "+arch+"."+key, loader.ErrNotFound)
		case v <= 0 || v > 1<<31:
			err = ferr("metadata "+arch+"."+key, fmt.Errorf("%w: %d", loader.ErrCorrupt, v))
		default:
			*dst = int(v)
		}
	}
	c := EncoderConfig{Arch: arch, NormEps: 1e-6, RopeTheta: 10000, RopeLocalTheta: 10000, Pooling: PoolMean}
	req("embedding_length", &c.Hidden)
	req("block_count", &c.Layers)
	req("attention.head_count", &c.Heads)
	req("feed_forward_length", &c.FFN)
	req("context_length", &c.MaxLen)
	c.KVHeads = c.Heads
	if _, ok := g.Int(arch + ".attention.head_count_kv"); ok {
		req("attention.head_count_kv", &c.KVHeads)
	}
	c.HeadSize = c.Hidden / max(c.Heads, 1)
	if _, ok := g.Int(arch + ".attention.key_length"); ok {
		req("attention.key_length", &c.HeadSize)
	}
	if err != nil {
		return nil, err
	}
	if v, ok := g.Int(arch + ".attention.value_length"); ok && int(v) != c.HeadSize {
		return nil, ferr("metadata "+arch+".attention.value_length", fmt.Errorf("%w: %d differs from attention.key_length %d", loader.ErrUnsupported, v, c.HeadSize))
	}
	if v, ok := g.Float(arch + ".attention.layer_norm_rms_epsilon"); ok {
		c.NormEps = v
	}
	if v, ok := g.Float(arch + ".rope.freq_base"); ok {
		c.RopeTheta = v
	}
	if v, ok := g.Float(arch + ".rope.freq_base_swa"); ok {
		c.RopeLocalTheta = v
	}
	if v, ok := g.Int(arch + ".attention.sliding_window"); ok {
		if v <= 0 || v > MaxContext {
			return nil, ferr("metadata "+arch+".attention.sliding_window", fmt.Errorf("%w: %d", loader.ErrCorrupt, v))
		}
		c.SlidingWindow = int(v)
	} else {
		return nil, ferr("metadata "+arch+".attention.sliding_window", loader.ErrNotFound)
	}
	if m, ok := g.Meta[arch+".attention.sliding_window_pattern"]; ok {
		v, isInt := g.Int(arch + ".attention.sliding_window_pattern")
		if !isInt || v <= 0 || v > MaxLayers {
			return nil, ferr("metadata "+arch+".attention.sliding_window_pattern", fmt.Errorf("%w: %v (a period is read; per-layer flags are not)", loader.ErrUnsupported, m))
		}
		c.SlidingPattern = int(v)
	}
	if typ, ok := g.String(arch + ".rope.scaling.type"); ok && typ != "none" {
		return nil, ferr("metadata "+arch+".rope.scaling.type", fmt.Errorf("%w: %q", loader.ErrUnsupported, typ))
	}
	if v, ok := g.Int(arch + ".pooling_type"); ok {
		p, ok := ggufPooling[v]
		if !ok {
			return nil, ferr("metadata "+arch+".pooling_type", fmt.Errorf("%w: pooling type %d (1 mean, 2 cls, 3 last)", loader.ErrUnsupported, v))
		}
		c.Pooling = p
	}

	w := &EncoderWeights{Tensors: map[string]*loader.Tensor{}, Source: g.File}
	get := func(name string) *loader.Tensor {
		if err != nil {
			return nil
		}
		t, e := g.Tensor(name)
		if e != nil {
			err = ferr("tensor "+name, e)
		}
		return t
	}
	shape := func(t *loader.Tensor, want ...int) {
		if err == nil && t != nil && !slices.Equal(t.Shape, want) {
			err = ferr("tensor "+t.Name, fmt.Errorf("%w: shape %v, want %v", loader.ErrCorrupt, t.Shape, want))
		}
	}
	put := func(name string, t *loader.Tensor, want ...int) {
		shape(t, want...)
		if err == nil {
			w.Tensors[name] = t
		}
	}
	D, F, H, Hk, Dh := c.Hidden, c.FFN, c.Heads, c.KVHeads, c.HeadSize
	tok := get("token_embd.weight")
	if tok != nil {
		c.Vocab = tok.Rows()
	}
	put("token_embd.weight", tok, c.Vocab, D)
	put("output_norm.weight", get("output_norm.weight"), D)
	for l := 0; l < c.Layers && err == nil; l++ {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		q, k, v := get(n("attn_q.weight")), get(n("attn_k.weight")), get(n("attn_v.weight"))
		shape(q, H*Dh, D)
		shape(k, Hk*Dh, D)
		shape(v, Hk*Dh, D)
		if err == nil {
			var qkv *loader.Tensor
			qkv, err = concatRows(fmt.Sprintf(NameEncQKV, l), q, k, v)
			put(fmt.Sprintf(NameEncQKV, l), qkv, (H+2*Hk)*Dh, D)
		}
		put(n("attn_output.weight"), get(n("attn_output.weight")), D, H*Dh)
		for _, name := range []string{"attn_norm.weight", "post_attention_norm.weight", "ffn_norm.weight", "post_ffw_norm.weight"} {
			put(n(name), get(n(name)), D)
		}
		put(n("attn_q_norm.weight"), get(n("attn_q_norm.weight")), Dh)
		put(n("attn_k_norm.weight"), get(n("attn_k_norm.weight")), Dh)
		gate, up := get(n("ffn_gate.weight")), get(n("ffn_up.weight"))
		shape(gate, F, D)
		shape(up, F, D)
		if err == nil {
			var gu *loader.Tensor
			gu, err = concatRows(fmt.Sprintf(NameEncGateUp, l), gate, up)
			put(fmt.Sprintf(NameEncGateUp, l), gu, 2*F, D)
		}
		put(n("ffn_down.weight"), get(n("ffn_down.weight")), D, F)
	}
	if err != nil {
		return nil, err
	}
	if g.Has(NameDense2) {
		d2 := get(NameDense2)
		if d2 != nil {
			c.DenseDim = d2.Rows()
		}
		put(NameDense2, d2, c.DenseDim, D)
		put(NameDense3, get(NameDense3), D, c.DenseDim)
		if err != nil {
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	w.Config = c
	return w, nil
}

// buildGemmaEncoder makes gemma-embedding's layers from gemma3's kinds
// (*Attention with its sandwich post-norm, *GatedMLP with GeGLU), run
// bidirectionally by their encode methods, and its final stage.
func buildGemmaEncoder(b Backend, e *Encoder, w *EncoderWeights, up func(string) Tensor) error {
	c := &e.Config
	H, Hk, Dh := c.Heads, c.KVHeadCount(), c.HeadDim()
	rot := func(theta float64) *RoPE {
		r := RopeSpec{Theta: theta, Dim: Dh, NeoX: true}
		return &RoPE{Dim: Dh, NeoX: true, InvFreq: r.InvFreq()}
	}
	global, local := rot(c.RopeTheta), rot(c.RopeLocalTheta)
	e.Scale = c.embedScale()
	e.FinalNorm = up("output_norm.weight")
	e.Layers = make([]EncoderLayer, c.Layers)
	for l := range e.Layers {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		a := &Attention{Norm: up(n("attn_norm.weight")), QKV: up(fmt.Sprintf(NameEncQKV, l)),
			QNorm: up(n("attn_q_norm.weight")), KNorm: up(n("attn_k_norm.weight")),
			Out: up(n("attn_output.weight")), PostNorm: up(n("post_attention_norm.weight")), Rope: global,
			Spec: AttentionSpec{Heads: H, KVHeads: Hk, HeadDim: Dh, QKNorm: true, PostNorm: true,
				Rope: RopeSpec{Theta: c.RopeTheta, Dim: Dh, NeoX: true}}}
		if c.Local(l) {
			a.Rope, a.Spec.Window, a.Spec.Rope.Theta = local, c.SlidingWindow, c.RopeLocalTheta
		}
		e.Layers[l] = EncoderLayer{Mixer: a, Channel: &GatedMLP{Norm: up(n("ffn_norm.weight")),
			GateUp: up(fmt.Sprintf(NameEncGateUp, l)), Down: up(n("ffn_down.weight")), GeGLU: true,
			PostNorm: up(n("post_ffw_norm.weight"))}}
	}
	if c.DenseDim > 0 {
		e.Dense = []Tensor{up(NameDense2), up(NameDense3)}
		return nil
	}
	// no dense layers: the final norm through an identity (exact in f32)
	id := make([]float32, c.Hidden*c.Hidden)
	for i := 0; i < c.Hidden; i++ {
		id[i*c.Hidden+i] = 1
	}
	t := f32Vector("output_identity", id)
	t.Shape = []int{c.Hidden, c.Hidden}
	it, err := b.Upload(t)
	if err != nil {
		return fmt.Errorf("%s: uploading the output identity: %w", w.Source, err)
	}
	e.Dense = []Tensor{it}
	return nil
}

// embedScale is sqrt(D) rounded to f32 (llama.cpp's sqrtf) for a family
// with EmbedScale, else 0.
func (c *EncoderConfig) embedScale() float32 {
	if fam := c.Family(); fam != nil && fam.EmbedScale {
		return float32(math.Sqrt(float64(c.Hidden)))
	}
	return 0
}
