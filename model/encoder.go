package model

import (
	"errors"
	"fmt"
	"math"
)

// Encoder is a loaded text-embedding model of an encoder family
// (family_bert.go): the embedding stage, a list of layers of its family's
// kinds, and pooling. It has no KV cache and no lm_head: Embed returns one
// pooled vector per input.
type Encoder struct {
	Config EncoderConfig
	// The embedding stage: x = LN(tok[t] + types[0] + pos[p]).
	Tok    Tensor // (V, D)
	Pos    Tensor // (C, D) f32; nil with rotary positions
	Type0  Tensor // (D) f32: token type 0's row
	NormW  Tensor // (D) f32
	NormB  Tensor // (D) f32
	Layers []EncoderLayer
	Rope   *RoPE // nomic-bert's rotation; nil for learned positions
	// The Gemma stage (family EmbedScale, FinalNorm): the embedding × Scale
	// (sqrt(D)), and at the end the final RMSNorm FinalNorm (D) applied in
	// Dense[0]'s prologue, then Dense[1]: dense_2 (DenseDim, D) and dense_3
	// (D, DenseDim), or without dense layers a (D, D) identity, so the norm
	// stays one MatMul.
	Scale     float32
	FinalNorm Tensor
	Dense     []Tensor
	b         Backend
	ops       EncoderOps
}

// EncoderLayer is one encoder block: a token mixer, then a channel mixer
// (BERT's kinds with post-LayerNorms, or a decoder family's pre-norm kinds
// run bidirectionally).
type EncoderLayer struct {
	Mixer   EncoderMixer
	Channel EncoderChannel
}

// EncoderMixer is an encoder layer's token mixer (MixerBidirectional, or
// the decoder's *Attention run within sequences).
type EncoderMixer interface {
	encode(e *encPass)
}

// BidirectionalAttention is the MixerBidirectional kind:
// res = LN(res + o_proj(attention(qkv(res)))).
type BidirectionalAttention struct {
	QKV      Tensor // (3D, D): [q | k | v]
	QKVBias  Tensor // (3D) f32; nil without biases
	Out      Tensor // (D, D)
	OutBias  Tensor // (D) f32; nil without biases
	NormW    Tensor // (D) the post-LayerNorm's weight
	NormB    Tensor // (D) and bias
	Heads    int
	HeadDim  int
	rotation *RoPE
}

// EncoderChannel is an encoder layer's channel mixer (ChannelGELU,
// ChannelSwiGLU).
type EncoderChannel interface {
	encode(e *encPass)
}

// GELUMLP is the ChannelGELU kind: res = LN(res + down(GELU(up(res) + bu)) + bd).
type GELUMLP struct {
	Up, UpBias     Tensor // (F, D), (F) f32
	Down, DownBias Tensor // (D, F), (D) f32
	NormW, NormB   Tensor // (D) the post-LayerNorm
}

// SwiGLUMLP is the ChannelSwiGLU kind: res = LN(res + down(silu(gate(res)) · up(res))).
type SwiGLUMLP struct {
	GateUp       Tensor // (2F, D): [gate | up]
	Down         Tensor // (D, F)
	NormW, NormB Tensor // (D) the post-LayerNorm
}

// encPass is what the layers of one Embed share.
type encPass struct {
	b   Backend
	ops EncoderOps
	eps float32
	res Tensor // (T, D) the residual stream
	qkv Tensor // (T, (H+2Hk)·Dh)
	att Tensor // (T, H·Dh)
	tmp Tensor // (T, D) a projection before its post-norm
	act Tensor // (T, F) or (T, F) after SiluMul
	pos Tensor // (T) i32 each token's position in its sequence
	seq Tensor // (T) i32 each token's sequence
	// causal: a decoder's layers (DecoderEmbedder), each sequence causal
	causal bool
}

func (a *BidirectionalAttention) encode(e *encPass) {
	e.b.MatMul(e.qkv, e.res, a.QKV, MatMulFusion{})
	if a.QKVBias != nil {
		e.ops.AddBias(e.qkv, a.QKVBias, false)
	}
	if a.rotation != nil {
		e.ops.Rope(e.qkv, e.pos, nil, nil, a.Heads, a.Heads, a.HeadDim, 0, a.rotation)
	}
	e.ops.AttendSeq(e.att, e.qkv, e.seq, a.Heads, a.Heads, a.HeadDim, 0, false)
	e.b.MatMul(e.tmp, e.att, a.Out, MatMulFusion{})
	if a.OutBias != nil {
		e.ops.AddBias(e.tmp, a.OutBias, false)
	}
	e.ops.LayerNorm(e.res, e.tmp, a.NormW, a.NormB, e.eps)
}

func (m *GELUMLP) encode(e *encPass) {
	e.b.MatMul(e.act, e.res, m.Up, MatMulFusion{})
	e.ops.AddBias(e.act, m.UpBias, true)
	e.b.MatMul(e.tmp, e.act, m.Down, MatMulFusion{})
	e.ops.AddBias(e.tmp, m.DownBias, false)
	e.ops.LayerNorm(e.res, e.tmp, m.NormW, m.NormB, e.eps)
}

func (m *SwiGLUMLP) encode(e *encPass) {
	e.b.MatMul(e.act, e.res, m.GateUp, MatMulFusion{SiluMul: true})
	e.b.MatMul(e.tmp, e.act, m.Down, MatMulFusion{})
	e.ops.LayerNorm(e.res, e.tmp, m.NormW, m.NormB, e.eps)
}

// encode runs the decoder's attention kind (gemma3's: pre-RMSNorm, q/k
// norm, RoPE, sandwich post-norm) bidirectionally within each sequence, as
// gemma-embedding does: no cache; a local layer (Spec.Window > 0) sees the
// keys within Window/2 positions either side (llama.cpp's symmetric
// sliding window), a global one the whole sequence.
func (a *Attention) encode(e *encPass) {
	sp := &a.Spec
	e.b.MatMul(e.qkv, e.res, a.QKV, MatMulFusion{Norm: a.Norm, Eps: e.eps})
	e.ops.Rope(e.qkv, e.pos, a.QNorm, a.KNorm, sp.Heads, sp.KVHeads, sp.HeadDim, e.eps, a.Rope)
	radius := sp.Window / 2
	if e.causal && sp.Window > 0 {
		radius = sp.Window - 1 // (pos-window, pos]
	}
	e.ops.AttendSeq(e.att, e.qkv, e.seq, sp.Heads, sp.KVHeads, sp.HeadDim, radius, e.causal)
	e.b.MatMul(e.res, e.att, a.Out, MatMulFusion{Add: true, PostNorm: a.PostNorm, Eps: e.eps})
}

// encode runs the decoder's gated MLP kind (gemma3's GeGLU with its
// post-norm) on every token: it mixes no positions.
func (m *GatedMLP) encode(e *encPass) {
	e.b.MatMul(e.act, e.res, m.GateUp, MatMulFusion{Norm: m.Norm, Eps: e.eps, SiluMul: !m.GeGLU, GeluMul: m.GeGLU})
	e.b.MatMul(e.res, e.act, m.Down, MatMulFusion{Add: true, PostNorm: m.PostNorm, Eps: e.eps})
}

// ErrNoEncoderOps reports a backend without the encoder ops.
var ErrNoEncoderOps = errors.New("model: the backend has no encoder ops (EncoderOps)")

// InputError is an input Embed cannot run: empty, too long for the model,
// or holding a token id outside the vocabulary.
type InputError struct {
	Index  int // the input's position in the request
	Tokens int // its length
	Max    int // the model's most tokens per input, when too long
	Reason string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("model: input %d (%d tokens): %s", e.Index, e.Tokens, e.Reason)
}

// ErrInputTooLong is what an InputError for an input over the model's
// length wraps.
var ErrInputTooLong = errors.New("input longer than the model's maximum")

// Unwrap returns ErrInputTooLong for a too-long input.
func (e *InputError) Unwrap() error {
	if e.Max > 0 && e.Tokens > e.Max {
		return ErrInputTooLong
	}
	return nil
}

// MaxTokens is the most tokens one input may have.
func (e *Encoder) MaxTokens() int { return e.Config.MaxLen }

// Backend returns the backend the encoder runs on.
func (e *Encoder) Backend() Backend { return e.b }

// check returns the inputs' total token count, or an *InputError.
func (e *Encoder) check(seqs [][]int32) (int, error) {
	T := 0
	for i, s := range seqs {
		switch {
		case len(s) == 0:
			return 0, &InputError{Index: i, Reason: "no tokens"}
		case len(s) > e.Config.MaxLen:
			return 0, &InputError{Index: i, Tokens: len(s), Max: e.Config.MaxLen,
				Reason: fmt.Sprintf("over the model's %d tokens", e.Config.MaxLen)}
		}
		for _, id := range s {
			if id < 0 || int(id) >= e.Config.Vocab {
				return 0, &InputError{Index: i, Tokens: len(s), Reason: fmt.Sprintf("token id %d outside the vocabulary of %d", id, e.Config.Vocab)}
			}
		}
		T += len(s)
	}
	if len(seqs) == 0 {
		return 0, &InputError{Reason: "no inputs"}
	}
	return T, nil
}

// Embed runs the inputs as one batch (each sequence attending only to
// itself, positions from 0) and returns each one's pooled vector with the
// model's pooling, not normalised (Normalize).
func (e *Encoder) Embed(seqs [][]int32) ([][]float32, error) {
	return e.run(seqs, true)
}

// Hidden returns every token's final hidden row of one input (pooling
// none).
func (e *Encoder) Hidden(ids []int32) ([][]float32, error) {
	return e.run([][]int32{ids}, false)
}

func (e *Encoder) run(seqs [][]int32, pool bool) ([][]float32, error) {
	T, err := e.check(seqs)
	if err != nil {
		return nil, err
	}
	c := &e.Config
	b, D := e.b, c.Hidden
	var tensors []Tensor
	f32 := func(shape ...int) Tensor {
		t := b.NewF32(shape...)
		tensors = append(tensors, t)
		return t
	}
	i32 := func(v []int32) Tensor {
		t := b.NewI32(len(v))
		tensors = append(tensors, t)
		b.WriteI32(t, v)
		return t
	}
	defer func() {
		for _, t := range tensors {
			b.Free(t)
		}
	}()
	ids := make([]int32, 0, T)
	pos := make([]int32, 0, T)
	seq := make([]int32, 0, T)
	bounds := make([]int32, 0, 2*len(seqs))
	for i, s := range seqs {
		bounds = append(bounds, int32(len(ids)), int32(len(ids)+len(s)))
		ids = append(ids, s...)
		for p := range s {
			pos = append(pos, int32(p))
			seq = append(seq, int32(i))
		}
	}
	ffn := c.FFN
	H, Hk, Dh := c.Heads, c.KVHeadCount(), c.HeadDim()
	e2 := &encPass{b: b, ops: e.ops, eps: float32(c.NormEps),
		res: f32(T, D), qkv: f32(T, (H+2*Hk)*Dh), att: f32(T, H*Dh), tmp: f32(T, D), act: f32(T, ffn),
		pos: i32(pos), seq: i32(seq)}
	idT := i32(ids)
	b.Embed(e2.res, e.Tok, idT)
	if e.Scale != 0 {
		b.Scale(e2.res, e.Scale)
	}
	if e.NormW != nil {
		e.ops.AddBias(e2.res, e.Type0, false)
		var add Tensor
		if e.Pos != nil {
			b.Embed(e2.tmp, e.Pos, e2.pos)
			add = e2.tmp
		}
		e.ops.LayerNorm(e2.res, add, e.NormW, e.NormB, e2.eps)
	}
	for l := range e.Layers {
		e.Layers[l].Mixer.encode(e2)
		e.Layers[l].Channel.encode(e2)
	}
	rows, out := T, e2.res
	if e.FinalNorm != nil {
		// RMSNorm, then the dense projections, on every row: linear with
		// no bias, so pooling after them equals llama.cpp's pooling before
		out = e.project(e2.res, T, f32)
	}
	if pool {
		hidden := out
		rows = len(seqs)
		out = f32(rows, D)
		bt := b.NewI32(len(seqs), 2)
		tensors = append(tensors, bt)
		b.WriteI32(bt, bounds)
		e.ops.Pool(out, hidden, bt, c.Pooling)
	}
	flat := make([]float32, rows*D)
	if err := b.ReadF32(out, flat); err != nil {
		return nil, err
	}
	vecs := make([][]float32, rows)
	for i := range vecs {
		vecs[i] = flat[i*D : (i+1)*D : (i+1)*D]
	}
	return vecs, nil
}

// project applies the final RMSNorm and the dense projections to x (T, D).
func (e *Encoder) project(x Tensor, T int, f32 func(...int) Tensor) Tensor {
	in := x
	for i, w := range e.Dense {
		out := f32(T, w.Shape()[0])
		f := MatMulFusion{}
		if i == 0 {
			f = MatMulFusion{Norm: e.FinalNorm, Eps: float32(e.Config.NormEps)}
		}
		e.b.MatMul(out, in, w, f)
		in = out
	}
	return in
}

// Normalize returns v / ‖v‖₂ as llama.cpp's common_embd_normalize(v, 2)
// computes it: the squares summed in float64, the scale rounded to f32
// once; a zero vector stays zero.
func Normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x * x)
	}
	var norm float32
	if sum > 0 {
		norm = float32(1 / math.Sqrt(sum))
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * norm
	}
	return out
}

// Truncate is the Matryoshka `dimensions` of a normalised embedding: the
// first dims values, renormalised. dims outside (0, len(v)) leaves v's
// length.
func Truncate(v []float32, dims int) []float32 {
	if dims <= 0 || dims >= len(v) {
		return Normalize(v)
	}
	return Normalize(v[:dims])
}
