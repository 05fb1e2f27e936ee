package model

import (
	"errors"
	"fmt"

	"wasmllm/loader"
)

// Model is a loaded model: plain structs of backend tensors and a Forward.
type Model struct {
	Config Config
	Rope   RoPE
	Embed  Tensor // (V, D)
	Norm   Tensor // (D)
	LMHead Tensor // (V, D); Embed when tied
	Layers []Layer

	b       Backend
	scratch map[scratchKey]*scratch
}

// Layer is one transformer block.
type Layer struct {
	AttnNorm Tensor // (D)
	QKV      Tensor // ((H+2Hk)*Dh, D)
	QKVBias  Tensor // ((H+2Hk)*Dh) f32, nil unless Config.QKVBias
	QNorm    Tensor // (Dh), nil unless Config.QKNorm
	KNorm    Tensor // (Dh)
	AttnOut  Tensor // (D, H*Dh)
	MLPNorm  Tensor // (D)
	MLP      MLP
}

// MLP is the feed-forward half of a block: dense SwiGLU or sparse MoE,
// chosen at load.
type MLP interface {
	// Forward reads x (T, D) and returns the tensor holding the output (T, D).
	Forward(b Backend, x Tensor, s *scratch) Tensor
}

// Dense is vLLM's LlamaMLP: merged gate_up, SiluAndMul, down.
type Dense struct {
	GateUp Tensor // (2F, D)
	Down   Tensor // (D, F)
}

// Forward implements MLP.
func (m *Dense) Forward(b Backend, x Tensor, s *scratch) Tensor {
	b.MatMul(s.gateUp, x, m.GateUp)
	b.SiluMul(s.act, s.gateUp)
	b.MatMul(x, s.act, m.Down)
	return x
}

// Sparse is Qwen3-MoE's block: router, top-A of E experts, no shared expert.
type Sparse struct {
	Router Tensor // (E, D)
	GateUp Tensor // (E, 2F, D)
	Down   Tensor // (E, D, F)
	TopK   int
	Norm   bool
}

// Forward implements MLP.
func (m *Sparse) Forward(b Backend, x Tensor, s *scratch) Tensor {
	b.MoE(s.moe, x, m.Router, m.GateUp, m.Down, m.TopK, m.Norm)
	return s.moe
}

// Build uploads w to b and assembles the model.
func Build(b Backend, w *Weights) (*Model, error) {
	if err := w.Check(); err != nil {
		return nil, err
	}
	c := w.Config
	m := &Model{Config: c, b: b, scratch: map[scratchKey]*scratch{}}
	up := func(name string) (Tensor, error) {
		t, err := w.Get(name)
		if err != nil {
			return nil, err
		}
		if u, ok := w.Uploaded[name]; ok {
			return u, nil
		}
		bt, err := b.Upload(t)
		if err != nil {
			return nil, fmt.Errorf("%s: uploading %s: %w", w.Source, name, err)
		}
		return bt, nil
	}
	var err error
	if m.Embed, err = up(NameEmbed); err != nil {
		return nil, err
	}
	if m.Norm, err = up(NameNorm); err != nil {
		return nil, err
	}
	m.LMHead = m.Embed
	if !c.TiedEmbeddings {
		if m.LMHead, err = up(NameLMHead); err != nil {
			return nil, err
		}
	}
	m.Rope = RoPE{Dim: c.HeadDim, NeoX: c.RopeNeoX, InvFreq: c.InvFreq()}
	if t, ok := w.Tensors[NameRopeFreqs]; ok {
		// llama.cpp divides each base frequency by its rope_freqs factor.
		factors, err := t.F32()
		if err != nil {
			return nil, err
		}
		base := (&Config{HeadDim: c.HeadDim, RopeTheta: c.RopeTheta}).InvFreq()
		for i := range base {
			m.Rope.InvFreq[i] = float32(float64(base[i]) / float64(factors[i]))
		}
	}
	m.Layers = make([]Layer, c.Layers)
	for l := range m.Layers {
		L := &m.Layers[l]
		f := func(s string) string { return fmt.Sprintf(s, l) }
		for _, p := range []struct {
			dst  *Tensor
			name string
		}{{&L.AttnNorm, NameAttnNorm}, {&L.QKV, NameQKV}, {&L.AttnOut, NameAttnOut}, {&L.MLPNorm, NameFFNNorm}} {
			if *p.dst, err = up(f(p.name)); err != nil {
				return nil, err
			}
		}
		if c.QKVBias {
			if L.QKVBias, err = up(f(NameQKVBias)); err != nil {
				return nil, err
			}
		}
		if c.QKNorm {
			if L.QNorm, err = up(f(NameQNorm)); err != nil {
				return nil, err
			}
			if L.KNorm, err = up(f(NameKNorm)); err != nil {
				return nil, err
			}
		}
		if c.MoE() {
			s := &Sparse{TopK: c.ExpertsUsed, Norm: c.NormTopK}
			if s.Router, err = up(f(NameRouter)); err != nil {
				return nil, err
			}
			if s.GateUp, err = up(f(NameGateUpExps)); err != nil {
				return nil, err
			}
			if s.Down, err = up(f(NameDownExps)); err != nil {
				return nil, err
			}
			L.MLP = s
		} else {
			d := &Dense{}
			if d.GateUp, err = up(f(NameGateUp)); err != nil {
				return nil, err
			}
			if d.Down, err = up(f(NameDown)); err != nil {
				return nil, err
			}
			L.MLP = d
		}
	}
	return m, nil
}

// ErrContextFull reports a batch that does not fit in the KV cache.
var ErrContextFull = errors.New("context full")

// ContextError names the positions asked for and the cache capacity.
type ContextError struct {
	Pos, Tokens, Capacity int
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("model: %d tokens at position %d exceed the context of %d positions", e.Tokens, e.Pos, e.Capacity)
}

func (e *ContextError) Unwrap() error { return ErrContextFull }

// NewCache allocates a KV cache for capacity positions.
func (m *Model) NewCache(capacity int) (KVCache, error) {
	c := m.Config
	return m.b.NewKVCache(c.Layers, capacity, c.KVHeads, c.HeadDim)
}

// ErrKVDType is wrapped by the error NewCacheOf returns for a type no KV
// cache stores.
var ErrKVDType = errors.New("model: the KV cache stores F32 or F16")

// NewCacheOf allocates a KV cache for capacity positions that stores keys
// and values as dt: F32 (NewCache) or F16 (half the memory and bandwidth).
// F16 needs a backend that implements KVCacheAllocator (the WebGPU
// backend); any other backend (the CPU backend) gets an F32 cache instead,
// so that a request for F16 still runs where it cannot be had: the type
// used is KVDTypeOf(cache). Any other dt is an error wrapping ErrKVDType.
func (m *Model) NewCacheOf(dt loader.DType, capacity int) (KVCache, error) {
	c := m.Config
	switch dt {
	case loader.F32:
		return m.NewCache(capacity)
	case loader.F16:
		if a, ok := m.b.(KVCacheAllocator); ok {
			return a.NewKVCacheOf(dt, c.Layers, capacity, c.KVHeads, c.HeadDim)
		}
		return m.NewCache(capacity)
	}
	return nil, fmt.Errorf("%w, not %v", ErrKVDType, dt)
}

// Forward runs the tokens ids at positions pos, pos+1, ... through the
// model, appending their keys and values to cache. It returns the logits
// for every token (T, V) when all is set, else for the last token only
// (1, V). The result is a backend tensor owned by the model and valid until
// the next Forward.
func (m *Model) Forward(cache KVCache, ids []int32, pos int, all bool) (Tensor, error) {
	T := len(ids)
	if T == 0 {
		return nil, errors.New("model: empty batch")
	}
	if pos < 0 || pos+T > cache.Capacity() {
		return nil, &ContextError{Pos: pos, Tokens: T, Capacity: cache.Capacity()}
	}
	c := &m.Config
	for _, id := range ids {
		if id < 0 || int(id) >= c.Vocab {
			return nil, fmt.Errorf("model: token id %d outside the vocabulary of %d", id, c.Vocab)
		}
	}
	return m.forward(cache, ids, nil, pos, all)
}

// ForwardFrom is Forward of one token at pos whose id is in idT (1) i32 on
// the backend, not on the host: a pipelined decode step that reads the
// previous step's argmax where it is, submitted before that id is read
// back. An id outside the vocabulary (the argmax of a NaN row, -1) gives
// logits the caller must discard.
func (m *Model) ForwardFrom(cache KVCache, idT Tensor, pos int) (Tensor, error) {
	if pos < 0 || pos+1 > cache.Capacity() {
		return nil, &ContextError{Pos: pos, Tokens: 1, Capacity: cache.Capacity()}
	}
	return m.forward(cache, nil, idT, pos, false)
}

// forward is Forward's body: the ids come from the host (ids) or, for one
// token, from a backend tensor (idT).
func (m *Model) forward(cache KVCache, ids []int32, idT Tensor, pos int, all bool) (Tensor, error) {
	c := &m.Config
	T := len(ids)
	if idT != nil {
		T = 1
	}
	b := m.b
	s := m.scratchFor(T, all)
	for i := range s.posHost {
		s.posHost[i] = int32(pos + i)
	}
	// The writes come first: a backend submits what is pending before a
	// write that follows GPU work.
	b.WriteI32(s.pos, s.posHost)
	if idT != nil {
		b.CopyRows(s.ids, idT, 0)
	} else {
		b.WriteI32(s.ids, ids)
	}
	eps := float32(c.RMSEps)
	b.Embed(s.res, m.Embed, s.ids)
	if f, ok := b.(Fuser); ok {
		return m.forwardFused(f, cache, s, T, all), nil
	}
	h := s.x
	marker, _ := b.(LayerMarker)
	for l := range m.Layers {
		L := &m.Layers[l]
		if marker != nil {
			marker.MarkLayer(l)
		}
		if l == 0 {
			b.RMSNorm(h, s.res, L.AttnNorm, eps)
		} else {
			b.AddRMSNorm(h, s.res, L.AttnNorm, eps)
		}
		b.MatMul(s.qkv, h, L.QKV)
		if c.QKNorm {
			b.QKNorm(s.qkv, L.QNorm, L.KNorm, c.Heads, c.KVHeads, eps)
		}
		b.RoPE(s.qkv, s.pos, L.QKVBias, c.Heads+c.KVHeads, &m.Rope)
		b.Attention(s.attn, s.qkv, s.pos, cache, l, c.SlidingWindow)
		b.MatMul(s.x, s.attn, L.AttnOut)
		b.AddRMSNorm(s.x, s.res, L.MLPNorm, eps)
		h = L.MLP.Forward(b, s.x, s)
	}
	if marker != nil {
		marker.MarkLayer(-1)
	}
	b.AddRMSNorm(h, s.res, m.Norm, eps)
	if all || T == 1 {
		b.MatMul(s.logits, h, m.LMHead)
		return s.logits, nil
	}
	b.CopyRows(s.last, h, T-1)
	b.MatMul(s.logits, s.last, m.LMHead)
	return s.logits, nil
}

// forwardFused is Forward's layers on a Fuser: the residual stream stays in
// s.res, each RMSNorm is folded into the matmul that reads it, the residual
// adds into the o_proj and down matmuls, SiluMul into gate_up, QKNorm, RoPE
// and the cache write into RoPEKV.
func (m *Model) forwardFused(f Fuser, cache KVCache, s *scratch, T int, all bool) Tensor {
	b, c := m.b, &m.Config
	eps := float32(c.RMSEps)
	marker, _ := b.(LayerMarker)
	for l := range m.Layers {
		L := &m.Layers[l]
		if marker != nil {
			marker.MarkLayer(l)
		}
		f.FusedMatMul(s.qkv, s.res, L.QKV, MatMulFusion{Norm: L.AttnNorm, Eps: eps})
		f.RoPEKV(s.qkv, s.pos, L.QKVBias, L.QNorm, L.KNorm, c.Heads+c.KVHeads, c.KVHeads, eps, &m.Rope, cache, l)
		f.AttendCached(s.attn, s.qkv, s.pos, cache, l, c.SlidingWindow)
		f.FusedMatMul(s.res, s.attn, L.AttnOut, MatMulFusion{Add: true})
		switch mlp := L.MLP.(type) {
		case *Dense:
			f.FusedMatMul(s.act, s.res, mlp.GateUp, MatMulFusion{Norm: L.MLPNorm, Eps: eps, SiluMul: true})
			f.FusedMatMul(s.res, s.act, mlp.Down, MatMulFusion{Add: true})
		case *Sparse:
			f.MoEAdd(s.res, L.MLPNorm, eps, mlp.Router, mlp.GateUp, mlp.Down, mlp.TopK, mlp.Norm)
		}
	}
	if marker != nil {
		marker.MarkLayer(-1)
	}
	final := MatMulFusion{Norm: m.Norm, Eps: eps}
	if all || T == 1 {
		f.FusedMatMul(s.logits, s.res, m.LMHead, final)
		return s.logits
	}
	b.CopyRows(s.last, s.res, T-1)
	f.FusedMatMul(s.logits, s.last, m.LMHead, final)
	return s.logits
}

type scratchKey struct {
	T   int
	all bool
}

// scratch holds the activations of one batch shape, allocated once.
type scratch struct {
	ids, pos Tensor // (T) i32
	posHost  []int32
	x, res   Tensor // (T, D)
	qkv      Tensor // (T, (H+2Hk)*Dh)
	attn     Tensor // (T, H*Dh)
	gateUp   Tensor // (T, 2F)
	act      Tensor // (T, F)
	moe      Tensor // (T, D)
	last     Tensor // (1, D)
	logits   Tensor // (T or 1, V)
	tensors  []Tensor
}

// maxScratch bounds how many batch shapes keep their activations.
const maxScratch = 4

func (m *Model) scratchFor(T int, all bool) *scratch {
	if T == 1 {
		all = true
	}
	key := scratchKey{T, all}
	if s, ok := m.scratch[key]; ok {
		return s
	}
	if len(m.scratch) >= maxScratch {
		for k, old := range m.scratch {
			if k.T != 1 {
				for _, t := range old.tensors {
					m.b.Free(t)
				}
				delete(m.scratch, k)
				break
			}
		}
	}
	c := &m.Config
	s := &scratch{posHost: make([]int32, T)}
	f32 := func(shape ...int) Tensor { t := m.b.NewF32(shape...); s.tensors = append(s.tensors, t); return t }
	i32 := func(shape ...int) Tensor { t := m.b.NewI32(shape...); s.tensors = append(s.tensors, t); return t }
	s.ids, s.pos = i32(T), i32(T)
	s.x, s.res = f32(T, c.Hidden), f32(T, c.Hidden)
	s.qkv = f32(T, (c.Heads+2*c.KVHeads)*c.HeadDim)
	s.attn = f32(T, c.Heads*c.HeadDim)
	if c.MoE() {
		s.moe = f32(T, c.Hidden)
	} else {
		s.gateUp, s.act = f32(T, 2*c.FFN), f32(T, c.FFN)
	}
	rows := T
	if !all {
		rows = 1
		s.last = f32(1, c.Hidden)
	}
	s.logits = f32(rows, c.Vocab)
	m.scratch[key] = s
	return s
}

// ScratchBytes is what the activations of one batch shape take: the
// tensors scratchFor allocates for T tokens (logits for every row with
// all, else for the last), 4 bytes a value; the total and the largest
// tensor. A backend's own buffers (MoE routing, attention partials) are
// not counted.
func ScratchBytes(c *Config, T int, all bool) (total, largest int64) {
	if T == 1 {
		all = true
	}
	t, d := int64(T), int64(c.Hidden)
	add := func(values int64) {
		total += 4 * values
		largest = max(largest, 4*values)
	}
	add(t) // ids
	add(t) // pos
	add(t * d)
	add(t * d)
	add(t * int64(c.Heads+2*c.KVHeads) * int64(c.HeadDim))
	add(t * int64(c.Heads) * int64(c.HeadDim))
	if c.MoE() {
		add(t * d)
	} else {
		add(2 * t * int64(c.FFN))
		add(t * int64(c.FFN))
	}
	rows := t
	if !all {
		rows = 1
		add(d)
	}
	add(rows * int64(c.Vocab))
	return total, largest
}

// Backend returns the backend the model runs on.
func (m *Model) Backend() Backend { return m.b }
