package model

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"wasmllm/loader"
)

// Model is a loaded model: plain structs of backend tensors, a list of
// layers of the kinds its family's row names (family.go), and one Forward.
type Model struct {
	Config Config
	Embed  Tensor // (V, D)
	Norm   Tensor // (D)
	LMHead Tensor // (V, D); Embed when tied
	// Gemma 4's per-layer embeddings (NamePLEmbed, NamePLProj, NamePLNorm);
	// nil without, and PLEmbed nil when the table is kept on the host
	// (Weights.PerLayerOnHost, perlayer_host.go).
	PLEmbed, PLProj, PLNorm Tensor
	Layers                  []Layer
	// MTP is the NextN/MTP block, the draft model of speculative decoding
	// (mtp.go); nil unless the weights hold one (LoadOptions.MTP).
	MTP *MTP
	// LongRoPE is how a LongRoPE model (Config.LongRoPE) picks its factor
	// set: per pass as Hugging Face does (the zero value), or per cache as
	// llama.cpp does.
	LongRoPE LongRoPEMode
	passEnd  int // SetPassEnd's: the end of the pass a chunk belongs to; 0: none

	b        Backend
	identity Tensor // (D, D) f32, uploaded on first use (mtp.go)
	scratch  map[scratchKey]*scratch
	plHost   *perLayerHost // the per-layer table in host memory; nil when on the backend or absent
	pass     pass          // what the layers of the Forward under way share, kept so a step allocates nothing
}

// Build uploads w to b and assembles the model, each layer as its spec says.
func Build(b Backend, w *Weights) (*Model, error) {
	if err := w.Check(); err != nil {
		return nil, err
	}
	c := w.Config
	if lc, ok := b.(LayerChecker); ok {
		if err := lc.CheckLayers(&c); err != nil {
			return nil, err
		}
	}
	m := &Model{Config: c, b: b, scratch: map[scratchKey]*scratch{}}
	var err error
	up := func(name string) Tensor {
		if err != nil {
			return nil
		}
		var t Tensor
		t, err = upload(b, w, name)
		return t
	}
	m.Embed, m.Norm = up(NameEmbed), up(NameNorm)
	if c.PerLayerInput > 0 {
		if w.PerLayerOnHost {
			t, gerr := w.Get(NamePLEmbed)
			if gerr == nil {
				m.plHost, gerr = newPerLayerHost(w, t)
			}
			if gerr != nil {
				return nil, gerr
			}
		} else {
			m.PLEmbed = up(NamePLEmbed)
		}
		m.PLProj, m.PLNorm = up(NamePLProj), up(NamePLNorm)
	}
	m.LMHead = m.Embed
	if !c.TiedEmbeddings {
		m.LMHead = up(NameLMHead)
	}
	if err != nil {
		return nil, err
	}
	var factors []float32
	if t, ok := w.Tensors[NameRopeFreqs]; ok {
		if factors, err = t.F32(); err != nil {
			return nil, err
		}
	}
	var short, long []float32
	if c.LongRoPE() {
		if short, long, err = longRoPEFactors(w); err != nil {
			return nil, err
		}
	}
	type tables struct{ rope, long *RoPE }
	ropes := map[RopeSpec]tables{} // one table (two with LongRoPE) per distinct rotation
	specs := c.Specs()
	_, kvGroup, kvIndex := c.KVGroups()
	m.Layers = make([]Layer, len(specs))
	kvLayers, slots := 0, 0
	newAttention := func(sp LayerSpec, f func(string) string) *Attention {
		rope, ok := ropes[sp.Attention.Rope]
		if !ok {
			if c.LongRoPE() {
				rope.rope, rope.long = longRoPETables(sp.Attention.Rope, c.RopeScaling.AttentionFactor, short, long)
			} else {
				fs := factors
				if sp.Attention.Rope.NoFactors {
					fs = nil
				}
				rope.rope = newRoPE(sp.Attention.Rope, fs, 1)
			}
			ropes[sp.Attention.Rope] = rope
		}
		a := &Attention{Rope: rope.rope, LongRope: rope.long, Spec: sp.Attention, KVLayer: kvLayers,
			Norm: up(f(NameAttnNorm)), QKV: up(f(NameQKV)), Out: up(f(NameAttnOut))}
		if sp.Attention.Bias {
			a.Bias = up(f(NameQKVBias))
		}
		if sp.Attention.QKNorm {
			a.QNorm, a.KNorm = up(f(NameQNorm)), up(f(NameKNorm))
		}
		if sp.Attention.PostNorm {
			a.PostNorm = up(f(NamePostAttnNorm))
		}
		if sp.Attention.NormQKV {
			a.QKVNorm = up(f(NameQKVNorm))
		}
		return a
	}
	for l, sp := range specs {
		f := func(s string) string { return fmt.Sprintf(s, l) }
		if sp.IsDeltaNet() {
			m.Layers[l].Mixer = &DeltaNet{Spec: sp.DeltaNet, Slot: slots, Norm: up(f(NameAttnNorm)),
				In: up(f(NameSSMIn)), Conv: up(f(NameSSMConv)), A: up(f(NameSSMA)), DtBias: up(f(NameSSMDtBias)),
				GNorm: up(f(NameSSMNorm)), Out: up(f(NameSSMOut))}
			slots++
		} else {
			a := newAttention(sp, f)
			if sp.Attention.NormQKV { // Gemma 4: KV groups, shared KV
				a.Group, a.KVLayer = kvGroup[l], kvIndex[l]
			}
			m.Layers[l].Mixer = a
			kvLayers++
		}
		m.Layers[l].Channel = channel(sp, f, up)
		if err != nil {
			return nil, err
		}
		if sp.PerLayer || sp.OutScale {
			post, perr := perLayerInput(w, sp, f, up)
			if err != nil { // an upload's
				return nil, err
			}
			if perr != nil {
				return nil, perr
			}
			m.Layers[l].Post = post
		}
	}
	if c.MTPLayers > 0 {
		mt, merr := buildMTP(m, w, c.Layers, up, newAttention)
		if err != nil {
			return nil, err
		}
		if merr != nil {
			return nil, merr
		}
		m.MTP = mt
	}
	return m, nil
}

// channel is the channel mixer of a layer of spec sp, its tensors named by
// f and uploaded by up.
func channel(sp LayerSpec, f func(string) string, up func(string) Tensor) ChannelMixer {
	if sp.Channel.Kind == ChannelGeGLUMoE {
		return &GemmaMoE{
			MLP: GatedMLP{Norm: up(f(NameFFNNorm)), GateUp: up(f(NameGateUp)), Down: up(f(NameDown)), GeGLU: true,
				PostNorm: up(f(NamePostFFNNorm1))},
			MoE: MoE{Spec: sp.Channel, Norm: up(f(NamePreFFNNorm2)), Router: up(f(NameRouter)),
				GateUp: up(f(NameGateUpExps)), Down: up(f(NameDownExps))},
			RouterNorm: up(f(NameRouterNorm)), ExpertScale: up(f(NameExpertScale)), PostNorm2: up(f(NamePostFFNNorm2)),
			PostNorm: up(f(NamePostFFNNorm)),
		}
	}
	if sp.Channel.Kind == ChannelMoE {
		moe := &MoE{Spec: sp.Channel, Norm: up(f(NameFFNNorm)),
			Router: up(f(NameRouter)), GateUp: up(f(NameGateUpExps)), Down: up(f(NameDownExps))}
		if sp.Channel.SharedFFN > 0 {
			moe.Shared = SharedExpert{GateUp: up(f(NameGateUpShexp)), Down: up(f(NameDownShexp)), Gate: up(f(NameGateShexp))}
		}
		return moe
	}
	m := &GatedMLP{Norm: up(f(NameFFNNorm)), GateUp: up(f(NameGateUp)), Down: up(f(NameDown)), GeGLU: sp.Channel.Kind == ChannelGeGLU}
	if sp.Channel.PostNorm {
		m.PostNorm = up(f(NamePostFFNNorm))
	}
	return m
}

// perLayerInput is the end of layer l of spec sp (Gemma 4): its per-layer
// input's tensors, uploaded by up, and its output scale, read from w.
func perLayerInput(w *Weights, sp LayerSpec, f func(string) string, up func(string) Tensor) (*PerLayerInput, error) {
	p := &PerLayerInput{}
	if sp.PerLayer {
		p.Gate, p.Out, p.PostNorm = up(f(NamePLGate)), up(f(NamePLOut)), up(f(NamePLPostNorm))
	}
	if sp.OutScale {
		t, err := w.Get(f(NameLayerScale))
		if err != nil {
			return nil, err
		}
		v, err := t.F32()
		if err != nil {
			return nil, err
		}
		if len(v) != 1 || !finite(float64(v[0])) {
			return nil, &loader.FormatError{File: w.Source, Field: "tensor " + f(NameLayerScale), Offset: -1,
				Err: fmt.Errorf("%w: %v, want one finite value", loader.ErrCorrupt, v)}
		}
		p.Scale = v[0]
	}
	return p, nil
}

// newRoPE is the rotation r with its frequencies, each base frequency
// divided by its GGUF rope_freqs factor when factors are given (as
// llama.cpp does; llama3's scaling is then in the factors, not in r), and
// cos and sin multiplied by scale (LongRoPE's attention factor; 1: none).
func newRoPE(r RopeSpec, factors []float32, scale float32) *RoPE {
	rp := &RoPE{Dim: r.Dim, NeoX: r.NeoX, InvFreq: r.InvFreq(), Scale: scale}
	if factors != nil {
		base := RopeSpec{Theta: r.Theta, Dim: r.Dim}.InvFreq()
		for i := range base {
			rp.InvFreq[i] = float32(float64(base[i]) / float64(factors[i]))
		}
	}
	return rp
}

// upload returns weight name of w on b: the tensor already uploaded, or w's
// tensor uploaded now.
func upload(b Backend, w *Weights, name string) (Tensor, error) {
	t, err := w.Get(name)
	if err != nil {
		return nil, err
	}
	if u, ok := w.Uploaded[name]; ok {
		return u, nil
	}
	if t.DType == loader.Mixed {
		return uploadStack(b, w, name, t)
	}
	bt, err := b.Upload(t)
	if err != nil {
		return nil, fmt.Errorf("%s: uploading %s: %w", w.Source, name, err)
	}
	return bt, nil
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

// NewCache allocates a KV cache for capacity positions: for a model with
// Gated DeltaNet layers, a *HybridCache with keys and values for the
// attention layers only and zeroed recurrent states.
func (m *Model) NewCache(capacity int) (KVCache, error) {
	if groups, _, _ := m.Config.KVGroups(); len(groups) > 1 {
		return m.groupedCache(groups, func(g KVGroup) (KVCache, error) {
			return m.b.NewKVCache(g.Layers, capacity, g.KVHeads, g.HeadDim)
		})
	}
	return m.newCache(capacity, func(layers int) (KVCache, error) {
		c := m.Config
		return m.b.NewKVCache(layers, capacity, c.KVHeads, c.HeadDim)
	})
}

// groupedCache makes a GroupedCache of groups, each cache made by kv.
func (m *Model) groupedCache(groups []KVGroup, kv func(KVGroup) (KVCache, error)) (KVCache, error) {
	if m.Config.Hybrid() {
		return nil, errors.New("model: KV groups in a hybrid model")
	}
	gc := &GroupedCache{}
	for _, g := range groups {
		c, err := kv(g)
		if err != nil {
			return nil, err
		}
		gc.Groups = append(gc.Groups, c)
	}
	return gc, nil
}

// newCache makes the model's cache with kv, which allocates the keys and
// values of layers attention layers.
func (m *Model) newCache(capacity int, kv func(layers int) (KVCache, error)) (KVCache, error) {
	c := &m.Config
	if !c.Hybrid() {
		return kv(c.Layers)
	}
	if capacity <= 0 {
		return nil, fmt.Errorf("model: a cache of %d positions", capacity)
	}
	var cache KVCache
	if n := c.AttentionLayers(); n > 0 {
		var err error
		if cache, err = kv(n); err != nil {
			return nil, err
		}
	}
	return m.newHybridCache(cache, capacity), nil
}

// ErrKVDType is wrapped by the error NewCacheOf returns for a type no KV
// cache stores.
var ErrKVDType = errors.New("model: the KV cache stores F32, F16 or Q8_0 (q8)")

// NewCacheOf allocates a KV cache for capacity positions that stores keys
// and values as dt: F32 (NewCache), F16 (half the memory and bandwidth) or
// KVQ8 (8-bit values, a scale per block: 28% of F32's bytes for heads of
// 128). F16 and KVQ8 need a backend that implements KVCacheAllocator (both
// backends do); any other backend gets an F32 cache instead, so that a
// request still runs where it cannot be had: the type used is
// KVDTypeOf(cache). Any other dt is an error wrapping ErrKVDType.
func (m *Model) NewCacheOf(dt loader.DType, capacity int) (KVCache, error) {
	c := m.Config
	switch dt {
	case loader.F32:
		return m.NewCache(capacity)
	case loader.F16, KVQ8:
		if a, ok := m.b.(KVCacheAllocator); ok {
			if groups, _, _ := c.KVGroups(); len(groups) > 1 {
				return m.groupedCache(groups, func(g KVGroup) (KVCache, error) {
					return a.NewKVCacheOf(dt, g.Layers, capacity, g.KVHeads, g.HeadDim)
				})
			}
			return m.newCache(capacity, func(layers int) (KVCache, error) {
				return a.NewKVCacheOf(dt, layers, capacity, c.KVHeads, c.HeadDim)
			})
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
	if err := checkState(cache, pos); err != nil {
		return nil, err
	}
	return m.forward(cache, ids, nil, pos, all, false)
}

// checkState refuses a forward at pos on a HybridCache whose states are
// elsewhere.
func checkState(cache KVCache, pos int) error {
	if h, ok := cache.(*HybridCache); ok && h.len != pos {
		return &StateError{Pos: pos, Len: h.len}
	}
	return nil
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
	if err := checkState(cache, pos); err != nil {
		return nil, err
	}
	if m.HostIDs() {
		return nil, errors.New("model: the per-layer embeddings are on the host: a forward needs its ids there")
	}
	return m.forward(cache, nil, idT, pos, false, false)
}

// ForwardHidden is Forward that also returns the final hidden rows
// (T, D): RMSNorm(x)·output_norm, the LM head's input, which the NextN/MTP
// block reads (mtp.go). The logits (of every token with all, else of the
// last) are the LM head applied to those rows. Both tensors are valid
// until the next Forward of T tokens.
func (m *Model) ForwardHidden(cache KVCache, ids []int32, pos int, all bool) (logits, hidden Tensor, err error) {
	if _, err := m.identityMatrix(); err != nil {
		return nil, nil, err
	}
	T := len(ids)
	if T == 0 {
		return nil, nil, errors.New("model: empty batch")
	}
	if pos < 0 || pos+T > cache.Capacity() {
		return nil, nil, &ContextError{Pos: pos, Tokens: T, Capacity: cache.Capacity()}
	}
	for _, id := range ids {
		if id < 0 || int(id) >= m.Config.Vocab {
			return nil, nil, fmt.Errorf("model: token id %d outside the vocabulary of %d", id, m.Config.Vocab)
		}
	}
	if err := checkState(cache, pos); err != nil {
		return nil, nil, err
	}
	logits, err = m.forward(cache, ids, nil, pos, all, true)
	if err != nil {
		return nil, nil, err
	}
	return logits, m.scratchFor(T, all).hidden, nil
}

// forward is Forward's body: the ids come from the host (ids) or, for one
// token, from a backend tensor (idT); with hidden, the final hidden rows
// are kept in the scratch's hidden and the logits computed from them.
func (m *Model) forward(cache KVCache, ids []int32, idT Tensor, pos int, all, hidden bool) (Tensor, error) {
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
	if m.plHost != nil { // the batch's per-layer rows, gathered here
		rows, err := m.plHost.gather(ids)
		if err != nil {
			return nil, err
		}
		b.WriteF32(s.ple, rows)
	}
	b.Embed(s.res, m.Embed, s.ids)
	if scale := c.EmbedScale(); scale != 0 {
		b.Scale(s.res, scale)
	}
	f := &m.pass
	*f = pass{b: b, s: s, eps: float32(c.RMSEps), long: m.useLongRoPE(cache, pos, T)}
	f.useCache(cache)
	if h, ok := cache.(*HybridCache); ok {
		f.useCache(h.KV)
		f.rec = h
		h.len = pos + T
	}
	if c.PerLayerInput > 0 {
		m.perLayerEmbed(f)
	}
	marker, _ := b.(LayerMarker)
	for l := range m.Layers {
		L := &m.Layers[l]
		if marker != nil {
			marker.MarkLayer(l)
		}
		L.Mixer.mix(f, l)
		L.Channel.mix(f)
		if L.Post != nil {
			L.Post.mix(f, l)
		}
	}
	if marker != nil {
		marker.MarkLayer(-1)
	}
	final := MatMulFusion{Norm: m.Norm, Eps: f.eps, SoftCap: float32(c.FinalLogitSoftcap)}
	if hidden {
		if s.hidden == nil {
			s.hidden = b.NewF32(T, c.Hidden)
			s.tensors = append(s.tensors, s.hidden)
		}
		b.MatMul(s.hidden, s.res, m.identity, MatMulFusion{Norm: m.Norm, Eps: f.eps})
		head := MatMulFusion{SoftCap: final.SoftCap}
		if all || T == 1 {
			b.MatMul(s.logits, s.hidden, m.LMHead, head)
		} else {
			b.CopyRows(s.last, s.hidden, T-1)
			b.MatMul(s.logits, s.last, m.LMHead, head)
		}
		return s.logits, nil
	}
	if all || T == 1 {
		b.MatMul(s.logits, s.res, m.LMHead, final)
		return s.logits, nil
	}
	b.CopyRows(s.last, s.res, T-1)
	b.MatMul(s.logits, s.last, m.LMHead, final)
	return s.logits, nil
}

// perLayerEmbed computes Gemma 4's per-layer inputs of the batch into
// s.ple (T, L*P), from the ids and the scaled embedding in s.res:
// (RMSNorm(PLProj·x/sqrt(D))·PLNorm per layer's P values +
// PLEmbed[id]·sqrt(P)) / sqrt(2). Four ops; three when the table is on
// the host (forward wrote the rows into s.ple).
func (m *Model) perLayerEmbed(f *pass) {
	b, s, c := f.b, f.s, &m.Config
	P := c.PerLayerInput
	if m.plHost == nil {
		b.Embed(s.ple, m.PLEmbed, s.ids)
	}
	b.Scale(s.ple, float32(math.Sqrt(float64(P))))
	b.MatMul(s.ple, s.res, m.PLProj, MatMulFusion{Scale: float32(1 / math.Sqrt(float64(c.Hidden))),
		PostNorm: m.PLNorm, PostNormGroup: P, Eps: f.eps, Add: true})
	b.Scale(s.ple, float32(1/math.Sqrt2))
}

type scratchKey struct {
	T   int
	all bool
}

// scratch holds the activations of one batch shape, allocated once.
type scratch struct {
	ids, pos Tensor // (T) i32
	posHost  []int32
	res      Tensor // (T, D) the residual stream
	qkv      Tensor // (T, (H+2Hk)*Dh), + H*Dh with an output gate
	attn     Tensor // (T, H*Dh)
	proj, dn Tensor // (T, ProjWidth), (T, n_v·S); nil without Gated DeltaNet layers
	act      Tensor // (T, F); nil without a gated MLP layer
	ffn      Tensor // (T, D) Gemma 4's dense and routed branches' sum; nil without
	// widths holds the activations of the widths layers differ in beyond
	// the above (Gemma 4's per-layer head dims and FFN widths), by width.
	widths map[[2]int]Tensor
	// the per-layer embeddings (Gemma 4): ple (T, L*P), a layer's gate
	// and its activation (T, P); nil without
	ple, pleGate, pleAct Tensor
	last                 Tensor // (1, D); nil with logits for every row
	hidden               Tensor // (T, D) the final hidden rows; allocated by ForwardHidden
	logits               Tensor // (T or 1, V)
	tensors              []Tensor
}

// The kinds of activation whose width differs by layer.
const (
	widthQKV = iota
	widthAttn
	widthAct
)

// widthOf is the activation of kind with w columns: def (the widest) when
// it has them, else the one of that width (layoutScratch made one for
// every width a layer has).
func (s *scratch) widthOf(kind int, def Tensor, w int) Tensor {
	if t, ok := s.widths[[2]int{kind, w}]; ok {
		return t
	}
	return def
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
	s := layoutScratch(&m.Config, T, all, func(i32 bool, shape ...int) Tensor {
		if i32 {
			return m.b.NewI32(shape...)
		}
		return m.b.NewF32(shape...)
	})
	s.posHost = make([]int32, T)
	m.scratch[key] = s
	return s
}

// layoutScratch is the one statement of the activations a Forward of T
// tokens uses, each made by alloc (an i32 or f32 tensor of shape).
func layoutScratch(c *Config, T int, all bool, alloc func(i32 bool, shape ...int) Tensor) *scratch {
	s := &scratch{}
	mk := func(i32 bool, shape ...int) Tensor {
		t := alloc(i32, shape...)
		s.tensors = append(s.tensors, t)
		return t
	}
	var qkv, attn, ffn, proj, dn int
	var widths [][2]int // every (kind, width) of qkv, attn and act, to find the other ones
	for _, sp := range c.Specs() {
		if sp.IsDeltaNet() {
			proj, dn = max(proj, sp.DeltaNet.ProjWidth()), max(dn, sp.DeltaNet.Inner())
		} else {
			a := sp.Attention
			qkv = max(qkv, a.qkvWidth())
			attn = max(attn, a.Heads*a.HeadDim)
			widths = append(widths, [2]int{widthQKV, a.qkvWidth()}, [2]int{widthAttn, a.Heads * a.HeadDim})
		}
		if gated(&sp) {
			ffn = max(ffn, sp.Channel.FFN)
			widths = append(widths, [2]int{widthAct, sp.Channel.FFN})
		}
	}
	s.ids, s.pos = mk(true, T), mk(true, T)
	s.res = mk(false, T, c.Hidden)
	if qkv > 0 {
		s.qkv, s.attn = mk(false, T, qkv), mk(false, T, attn)
	}
	if proj > 0 {
		s.proj, s.dn = mk(false, T, proj), mk(false, T, dn)
	}
	if ffn > 0 {
		s.act = mk(false, T, ffn)
	}
	if slices.ContainsFunc(c.Specs(), func(sp LayerSpec) bool { return gemmaMoE(&sp) }) {
		s.ffn = mk(false, T, c.Hidden)
	}
	for _, kw := range widths {
		if kw[1] != [...]int{qkv, attn, ffn}[kw[0]] && s.widths[kw] == nil {
			if s.widths == nil {
				s.widths = map[[2]int]Tensor{}
			}
			s.widths[kw] = mk(false, T, kw[1])
		}
	}
	if P := c.PerLayerInput; P > 0 {
		s.ple, s.pleGate, s.pleAct = mk(false, T, c.Layers*P), mk(false, T, P), mk(false, T, P)
	}
	rows := T
	if !all {
		rows = 1
		s.last = mk(false, 1, c.Hidden)
	}
	s.logits = mk(false, rows, c.Vocab)
	return s
}

// ScratchBytes is what the activations of one batch shape take: the
// tensors a Forward of T tokens allocates (logits for every row with all,
// else for the last), and the working space the fused ops keep beside them
// on either backend (a batch's normalised rows, (T, D), and a product
// before its SiluAndMul or add, (T, 2F) for a gated MLP, (T, D) for MoE),
// 4 bytes a value; the total and the largest tensor. A backend's other
// buffers (MoE routing, attention partials) are not counted.
func ScratchBytes(c *Config, T int, all bool) (total, largest int64) {
	if T == 1 {
		all = true
	}
	add := func(shape ...int) {
		n := int64(4)
		for _, d := range shape {
			n *= int64(d)
		}
		total += n
		largest = max(largest, n)
	}
	layoutScratch(c, T, all, func(_ bool, shape ...int) Tensor {
		add(shape...)
		return nil
	})
	product := 0
	for _, sp := range c.Specs() {
		switch sp.Channel.Kind {
		case ChannelGatedMLP, ChannelGeGLU:
			product = max(product, 2*sp.Channel.FFN)
		case ChannelMoE:
			product = max(product, c.Hidden)
		case ChannelGeGLUMoE:
			product = max(product, 2*sp.Channel.FFN, c.Hidden)
		}
	}
	add(T, c.Hidden)
	add(T, product)
	return total, largest
}

// Backend returns the backend the model runs on.
func (m *Model) Backend() Backend { return m.b }
