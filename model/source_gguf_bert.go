package model

import (
	"fmt"
	"math"
	"slices"

	"wasmllm/loader"
)

// EncoderWeights is an encoder's config and its tensors on the host, by the
// names BuildEncoder reads: GGUF's, with q/k/v merged into attn_qkv (rows
// [q | k | v], biases likewise), nomic-bert's gate and up into
// ffn_gate_up ([gate | up]), and token type 0's row as token_type0.
type EncoderWeights struct {
	Config  EncoderConfig
	Tensors map[string]*loader.Tensor
	Source  string
}

// Encoder tensor names beyond GGUF's.
const (
	NameTokenType0 = "token_type0"               // (D) f32: row 0 of token_types.weight
	NameEncQKV     = "blk.%d.attn_qkv.weight"    // (3D, D)
	NameEncQKVBias = "blk.%d.attn_qkv.bias"      // (3D) f32
	NameEncGateUp  = "blk.%d.ffn_gate_up.weight" // (2F, D)
)

// ggufPooling maps llama.cpp's <arch>.pooling_type.
var ggufPooling = map[int64]Pooling{1: PoolMean, 2: PoolCLS, 3: PoolLast}

// IsEncoderGGUF reports whether g's architecture is an encoder family.
func IsEncoderGGUF(g *loader.GGUF) bool {
	arch, _ := g.String("general.architecture")
	_, ok := EncoderFamilyOf(arch)
	return ok
}

// EncoderFromGGUF maps a GGUF of an encoder architecture (bert,
// nomic-bert, gemma-embedding) onto an EncoderConfig and its tensors. Errors are
// *loader.FormatError naming the key or tensor, or *ConfigError.
func EncoderFromGGUF(g *loader.GGUF) (*EncoderWeights, error) {
	arch, _ := g.String("general.architecture")
	fam, ok := EncoderFamilyOf(arch)
	ferr := func(field string, err error) error {
		return &loader.FormatError{File: g.File, Field: field, Offset: -1, Err: err}
	}
	if !ok {
		return nil, ferr("metadata general.architecture", fmt.Errorf("%w: %q is not an encoder architecture", loader.ErrUnsupported, arch))
	}
	if fam.FinalNorm {
		return gemmaEmbeddingFromGGUF(g, arch)
	}
	req := func(key string) (int, error) {
		v, ok := g.Int(arch + "." + key)
		if !ok {
			return 0, ferr("metadata "+arch+"."+key, loader.ErrNotFound)
		}
		if v <= 0 || v > 1<<31 {
			return 0, ferr("metadata "+arch+"."+key, fmt.Errorf("%w: %d", loader.ErrCorrupt, v))
		}
		return int(v), nil
	}
	c := EncoderConfig{Arch: arch, NormEps: 1e-12}
	var err error
	for _, f := range []struct {
		key string
		dst *int
	}{
		{"embedding_length", &c.Hidden}, {"block_count", &c.Layers}, {"attention.head_count", &c.Heads},
		{"feed_forward_length", &c.FFN}, {"context_length", &c.MaxLen},
	} {
		if *f.dst, err = req(f.key); err != nil {
			return nil, err
		}
	}
	if kv, ok := g.Int(arch + ".attention.head_count_kv"); ok && kv != int64(c.Heads) {
		return nil, ferr("metadata "+arch+".attention.head_count_kv", fmt.Errorf("%w: %d kv heads of %d (encoders have no GQA)", loader.ErrUnsupported, kv, c.Heads))
	}
	if v, ok := g.Float(arch + ".attention.layer_norm_epsilon"); ok {
		c.NormEps = v
	}
	if fam.Positions == PositionsRope {
		c.RopeTheta = 10000
		if v, ok := g.Float(arch + ".rope.freq_base"); ok {
			c.RopeTheta = v
		}
	}
	c.Pooling = PoolMean
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
		var t *loader.Tensor
		t, err = g.Tensor(name)
		if err != nil {
			err = ferr("tensor "+name, err)
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
	D, F := c.Hidden, c.FFN
	tok := get("token_embd.weight")
	if tok != nil {
		c.Vocab = tok.Rows()
	}
	put("token_embd.weight", tok, c.Vocab, D)
	types := get("token_types.weight")
	if types != nil {
		c.TokenTypes = types.Rows()
		shape(types, c.TokenTypes, D)
		if err == nil {
			var v []float32
			if v, err = types.F32(); err == nil {
				w.Tensors[NameTokenType0] = f32Vector(NameTokenType0, v[:D])
			}
		}
	}
	if fam.Positions == PositionsLearned {
		put("position_embd.weight", get("position_embd.weight"), c.MaxLen, D)
	}
	put("token_embd_norm.weight", get("token_embd_norm.weight"), D)
	put("token_embd_norm.bias", get("token_embd_norm.bias"), D)
	for l := 0; l < c.Layers && err == nil; l++ {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		if fam.Biases {
			q, k, v := get(n("attn_q.weight")), get(n("attn_k.weight")), get(n("attn_v.weight"))
			for _, t := range []*loader.Tensor{q, k, v} {
				shape(t, D, D)
			}
			qb, kb, vb := get(n("attn_q.bias")), get(n("attn_k.bias")), get(n("attn_v.bias"))
			if err == nil {
				var qkv, bias *loader.Tensor
				if qkv, err = concatRows(fmt.Sprintf(NameEncQKV, l), q, k, v); err == nil {
					bias, err = concatBias(fmt.Sprintf(NameEncQKVBias, l), qb, kb, vb)
				}
				put(fmt.Sprintf(NameEncQKV, l), qkv, 3*D, D)
				put(fmt.Sprintf(NameEncQKVBias, l), bias, 3*D)
			}
			put(n("attn_output.bias"), get(n("attn_output.bias")), D)
		} else {
			put(fmt.Sprintf(NameEncQKV, l), get(n("attn_qkv.weight")), 3*D, D)
		}
		put(n("attn_output.weight"), get(n("attn_output.weight")), D, D)
		put(n("attn_output_norm.weight"), get(n("attn_output_norm.weight")), D)
		put(n("attn_output_norm.bias"), get(n("attn_output_norm.bias")), D)
		put(n("layer_output_norm.weight"), get(n("layer_output_norm.weight")), D)
		put(n("layer_output_norm.bias"), get(n("layer_output_norm.bias")), D)
		put(n("ffn_down.weight"), get(n("ffn_down.weight")), D, F)
		switch fam.Channel {
		case ChannelGELU:
			put(n("ffn_up.weight"), get(n("ffn_up.weight")), F, D)
			put(n("ffn_up.bias"), get(n("ffn_up.bias")), F)
			put(n("ffn_down.bias"), get(n("ffn_down.bias")), D)
		case ChannelSwiGLU:
			gate, up := get(n("ffn_gate.weight")), get(n("ffn_up.weight"))
			shape(gate, F, D)
			shape(up, F, D)
			if err == nil {
				var gu *loader.Tensor
				gu, err = concatRows(fmt.Sprintf(NameEncGateUp, l), gate, up)
				put(fmt.Sprintf(NameEncGateUp, l), gu, 2*F, D)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if c.TokenTypes == 0 {
		// no token_types tensor: a zero row
		c.TokenTypes = 1
		w.Tensors[NameTokenType0] = f32Vector(NameTokenType0, make([]float32, D))
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	w.Config = c
	return w, nil
}

// f32Vector is a host F32 tensor of v.
func f32Vector(name string, v []float32) *loader.Tensor {
	data := make([]byte, 4*len(v))
	for i, f := range v {
		bits := math.Float32bits(f)
		data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{len(v)}, Data: data}
}

// BuildEncoder uploads w to b and assembles the encoder, each layer of its
// family's kinds. b must implement EncoderOps.
func BuildEncoder(b Backend, w *EncoderWeights) (*Encoder, error) {
	ops, ok := b.(EncoderOps)
	if !ok {
		return nil, ErrNoEncoderOps
	}
	c := w.Config
	if err := c.Validate(); err != nil {
		return nil, err
	}
	fam := c.Family()
	var err error
	up := func(name string) Tensor {
		if err != nil {
			return nil
		}
		t, ok := w.Tensors[name]
		if !ok {
			err = fmt.Errorf("%s: tensor %s missing", w.Source, name)
			return nil
		}
		var bt Tensor
		if bt, err = b.Upload(t); err != nil {
			err = fmt.Errorf("%s: uploading %s: %w", w.Source, name, err)
		}
		return bt
	}
	if fam.FinalNorm {
		e := &Encoder{Config: c, b: b, ops: ops, Tok: up("token_embd.weight")}
		berr := buildGemmaEncoder(b, e, w, up)
		if err == nil {
			err = berr
		}
		if err != nil {
			return nil, err
		}
		return e, nil
	}
	e := &Encoder{Config: c, b: b, ops: ops,
		Tok: up("token_embd.weight"), Type0: up(NameTokenType0),
		NormW: up("token_embd_norm.weight"), NormB: up("token_embd_norm.bias")}
	if fam.Positions == PositionsLearned {
		e.Pos = up("position_embd.weight")
	} else {
		r := RopeSpec{Theta: c.RopeTheta, Dim: c.HeadDim(), NeoX: true}
		e.Rope = &RoPE{Dim: r.Dim, NeoX: true, InvFreq: r.InvFreq()}
	}
	e.Layers = make([]EncoderLayer, c.Layers)
	for l := range e.Layers {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		a := &BidirectionalAttention{QKV: up(fmt.Sprintf(NameEncQKV, l)), Out: up(n("attn_output.weight")),
			NormW: up(n("attn_output_norm.weight")), NormB: up(n("attn_output_norm.bias")),
			Heads: c.Heads, HeadDim: c.HeadDim(), rotation: e.Rope}
		if fam.Biases {
			a.QKVBias, a.OutBias = up(fmt.Sprintf(NameEncQKVBias, l)), up(n("attn_output.bias"))
		}
		e.Layers[l].Mixer = a
		switch fam.Channel {
		case ChannelGELU:
			e.Layers[l].Channel = &GELUMLP{Up: up(n("ffn_up.weight")), UpBias: up(n("ffn_up.bias")),
				Down: up(n("ffn_down.weight")), DownBias: up(n("ffn_down.bias")),
				NormW: up(n("layer_output_norm.weight")), NormB: up(n("layer_output_norm.bias"))}
		case ChannelSwiGLU:
			e.Layers[l].Channel = &SwiGLUMLP{GateUp: up(fmt.Sprintf(NameEncGateUp, l)), Down: up(n("ffn_down.weight")),
				NormW: up(n("layer_output_norm.weight")), NormB: up(n("layer_output_norm.bias"))}
		}
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}
