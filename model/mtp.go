package model

import (
	"errors"
	"fmt"

	"wasmllm/loader"
)

// MTP is a Qwen3.5 NextN/MTP block (llama.cpp's graph_mtp in qwen35.cpp):
// a draft model that predicts the token after next from a token and the
// trunk's hidden row. For token x at position p and hidden row h:
//
//	c  = eh_proj · [RMSNorm(embd(x))·enorm ; RMSNorm(h)·hnorm]   (embedding first)
//	c += one full-attention layer and its channel mixer (its own KV cache)
//	h' = RMSNorm(c)·shared_head_norm
//	logits = LMHead · h'
//
// h is the trunk's output_norm-ed final hidden row (Model.ForwardHidden),
// and the row at position p pairs x_p with h_{p-1}, the hidden that
// predicted x_p; a draft chain feeds each drafted token with the block's
// own h' of the step before.
//
// eh_proj is split on upload into its embedding and hidden halves, so the
// two norms are the MatMul's prologue and the concatenation is a sum of
// two products. The normalised rows h' (and the trunk's h) are
// materialised by a MatMul with the identity (D, D) and the norm as its
// prologue: exact, and no new Backend op, for D² multiply-adds a token
// (D/V of the LM head's).
type MTP struct {
	EmbedProj, HiddenProj Tensor // (D, D) each: eh_proj's columns [0, D) and [D, 2D)
	ENorm, HNorm          Tensor // (D)
	HeadNorm              Tensor // (D) shared_head_norm
	Layer                 Layer  // the block's layer; its attention is layer 0 of the MTP cache

	m       *Model
	scratch map[int]*mtpScratch
	pass    pass
}

// mtpScratch is the activations of one MTP batch of T tokens: a layer's
// (res is c) and the block's own.
type mtpScratch struct {
	*scratch
	embd, hidden Tensor // (T, D): the tokens' embedding rows, h'
}

// buildMTP makes the NextN/MTP block of layer l from w.
func buildMTP(m *Model, w *Weights, l int, up func(string) Tensor, attn func(LayerSpec, func(string) string) *Attention) (*MTP, error) {
	c := &m.Config
	f := func(s string) string { return fmt.Sprintf(s, l) }
	t, err := w.Get(f(NameMTPEHProj))
	if err != nil {
		return nil, err
	}
	e, h, err := splitCols(t, c.Hidden)
	if err != nil {
		return nil, &loader.FormatError{File: w.Source, Field: "tensor " + t.Name, Offset: -1, Err: err}
	}
	mt := &MTP{m: m, scratch: map[int]*mtpScratch{}, ENorm: up(f(NameMTPENorm)), HNorm: up(f(NameMTPHNorm)), HeadNorm: up(f(NameMTPHeadNorm))}
	for _, half := range []struct {
		dst *Tensor
		t   *loader.Tensor
	}{{&mt.EmbedProj, e}, {&mt.HiddenProj, h}} {
		if *half.dst, err = m.b.Upload(half.t); err != nil {
			return nil, fmt.Errorf("%s: uploading %s: %w", w.Source, half.t.Name, err)
		}
	}
	sp := c.MTPSpec()
	a := attn(sp, f)
	a.KVLayer = 0
	mt.Layer = Layer{Mixer: a, Channel: channel(sp, f, up)}
	return mt, nil
}

// splitCols splits t (N, 2K) into its columns [0, K) and [K, 2K): byte
// copies of each row's halves, for any type whose blocks do not straddle
// column K.
func splitCols(t *loader.Tensor, K int) (*loader.Tensor, *loader.Tensor, error) {
	if len(t.Shape) != 2 || t.Shape[1] != 2*K {
		return nil, nil, fmt.Errorf("%w: shape %v, want (N, %d)", loader.ErrCorrupt, t.Shape, 2*K)
	}
	be := t.DType.BlockElems()
	if be == 0 || K%be != 0 {
		return nil, nil, fmt.Errorf("%w: %v rows of %d columns cannot be split at column %d", loader.ErrUnsupported, t.DType, 2*K, K)
	}
	data, err := t.Bytes()
	if err != nil {
		return nil, nil, err
	}
	N, half := t.Shape[0], K/be*t.DType.BlockBytes()
	if len(data) != 2*N*half {
		return nil, nil, fmt.Errorf("%w: %d bytes for %v %v", loader.ErrCorrupt, len(data), t.DType, t.Shape)
	}
	a, b := make([]byte, 0, N*half), make([]byte, 0, N*half)
	for r := range N {
		row := data[2*r*half : 2*(r+1)*half]
		a, b = append(a, row[:half]...), append(b, row[half:]...)
	}
	mk := func(suffix string, d []byte) *loader.Tensor {
		return &loader.Tensor{Name: t.Name + suffix, DType: t.DType, Shape: []int{N, K}, Data: d}
	}
	return mk(" (embedding half)", a), mk(" (hidden half)", b), nil
}

// identity uploads the (D, D) identity once: the MatMul that materialises
// normalised rows.
func (m *Model) identityMatrix() (Tensor, error) {
	if m.identity != nil {
		return m.identity, nil
	}
	D := m.Config.Hidden
	v := make([]float32, D*D)
	for i := range D {
		v[i*D+i] = 1
	}
	t, err := m.b.Upload(&loader.Tensor{Name: "identity", DType: loader.F32, Shape: []int{D, D}, Data: f32Bytes(v)})
	if err != nil {
		return nil, err
	}
	m.identity = t
	return t, nil
}

// NewCache allocates the block's KV cache (its one attention layer) for
// capacity positions.
func (mt *MTP) NewCache(capacity int) (KVCache, error) {
	c := &mt.m.Config
	return mt.m.b.NewKVCache(1, capacity, c.KVHeads, c.HeadDim)
}

// ErrMTPBatch is wrapped by the error for an MTP batch whose hidden rows
// do not match its tokens.
var ErrMTPBatch = errors.New("model: the MTP block's hidden rows do not match its tokens")

// Forward runs tokens ids at positions pos, pos+1, ... with the trunk's
// hidden rows (T, D) (row t pairs with ids[t]: the hidden at position
// pos+t-1) through the block, writing its KV cache, and returns its logits
// (T, V) and its hidden rows h' (T, D), both owned by the block and valid
// until its next Forward of T tokens.
func (mt *MTP) Forward(cache KVCache, ids []int32, hidden Tensor, pos int) (logits, hOut Tensor, err error) {
	m := mt.m
	c := &m.Config
	T := len(ids)
	if T == 0 {
		return nil, nil, errors.New("model: empty batch")
	}
	if sh := hidden.Shape(); len(sh) != 2 || sh[0] != T || sh[1] != c.Hidden {
		return nil, nil, fmt.Errorf("%w: %d tokens, hidden %v", ErrMTPBatch, T, sh)
	}
	if pos < 0 || pos+T > cache.Capacity() {
		return nil, nil, &ContextError{Pos: pos, Tokens: T, Capacity: cache.Capacity()}
	}
	for _, id := range ids {
		if id < 0 || int(id) >= c.Vocab {
			return nil, nil, fmt.Errorf("model: token id %d outside the vocabulary of %d", id, c.Vocab)
		}
	}
	id, err := m.identityMatrix()
	if err != nil {
		return nil, nil, err
	}
	b, s := m.b, mt.scratchFor(T)
	for i := range s.posHost {
		s.posHost[i] = int32(pos + i)
	}
	b.WriteI32(s.pos, s.posHost)
	b.WriteI32(s.ids, ids)
	b.Embed(s.embd, m.Embed, s.ids)
	eps := float32(c.RMSEps)
	b.MatMul(s.res, s.embd, mt.EmbedProj, MatMulFusion{Norm: mt.ENorm, Eps: eps})
	b.MatMul(s.res, hidden, mt.HiddenProj, MatMulFusion{Norm: mt.HNorm, Eps: eps, Add: true})
	mt.pass = pass{b: b, s: s.scratch, eps: eps}
	mt.pass.useCache(cache)
	mt.Layer.Mixer.mix(&mt.pass, 0)
	mt.Layer.Channel.mix(&mt.pass)
	b.MatMul(s.hidden, s.res, id, MatMulFusion{Norm: mt.HeadNorm, Eps: eps})
	b.MatMul(s.logits, s.hidden, m.LMHead, MatMulFusion{})
	return s.logits, s.hidden, nil
}

func (mt *MTP) scratchFor(T int) *mtpScratch {
	if s, ok := mt.scratch[T]; ok {
		return s
	}
	if len(mt.scratch) >= maxScratch {
		for k, old := range mt.scratch {
			if k != 1 {
				for _, t := range old.tensors {
					mt.m.b.Free(t)
				}
				delete(mt.scratch, k)
				break
			}
		}
	}
	one := mt.m.Config
	one.Layers, one.LayerTypes = 1, []string{LayerFullAttention}
	b := mt.m.b
	s := &mtpScratch{scratch: layoutScratch(&one, T, true, func(i32 bool, shape ...int) Tensor {
		if i32 {
			return b.NewI32(shape...)
		}
		return b.NewF32(shape...)
	})}
	s.posHost = make([]int32, T)
	s.embd, s.hidden = b.NewF32(T, one.Hidden), b.NewF32(T, one.Hidden)
	s.tensors = append(s.tensors, s.embd, s.hidden)
	mt.scratch[T] = s
	return s
}
