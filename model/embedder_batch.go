package model

// The decoder embedder's one-batch path: a batch of inputs of different
// lengths runs as one pass of the encoder ops (encPass), each token
// carrying its sequence id, attention causal within its own sequence
// (AttendSeq with causal), so no input sees another and no padding exists
// to leak into a pooled vector. It needs no KV cache.

// Batched reports whether Embed runs a batch as one pass (not Sequential,
// and the backend and layer kinds allow it).
func (d *DecoderEmbedder) Batched() bool {
	_, ok := d.batchable()
	return ok && !d.Sequential
}

// batchable reports whether d's model can run as one batch: a backend
// with the encoder ops, and layers whose kinds have an encode method with
// no feature it lacks (plain or q/k-normed attention over full heads, a
// gated MLP; not Qwen2's biases, LongRoPE, an output gate, Gemma 4's
// shared KV and per-layer inputs, Gated DeltaNet or MoE).
func (d *DecoderEmbedder) batchable() (EncoderOps, bool) {
	m := d.M
	ops, ok := m.b.(EncoderOps)
	if !ok || m.PLEmbed != nil || len(m.Layers) == 0 {
		return nil, false
	}
	var first AttentionSpec
	for l, ly := range m.Layers {
		a, ok := ly.Mixer.(*Attention)
		if !ok || ly.Post != nil || a.Bias != nil || a.LongRope != nil || a.QKVNorm != nil || a.Rope == nil {
			return nil, false
		}
		sp := a.Spec
		if sp.OutputGate || sp.SharesKV || sp.NormQKV || sp.Bias || sp.KVHeads <= 0 || sp.Heads%sp.KVHeads != 0 {
			return nil, false
		}
		if (a.QNorm == nil) != (a.KNorm == nil) || a.Rope.CosSinScale() != 1 {
			return nil, false
		}
		if l == 0 {
			first = sp
		} else if sp.Heads != first.Heads || sp.KVHeads != first.KVHeads || sp.HeadDim != first.HeadDim {
			return nil, false
		}
		if _, ok := ly.Channel.(*GatedMLP); !ok {
			return nil, false
		}
	}
	return ops, true
}

// runBatch runs seqs as one batch and returns each one's pooled vector
// (pool) or every token's final normalised hidden row.
func (d *DecoderEmbedder) runBatch(ops EncoderOps, seqs [][]int32, pool bool) ([][]float32, error) {
	m := d.M
	c := &m.Config
	b, D := m.b, c.Hidden
	id, err := m.identityMatrix()
	if err != nil {
		return nil, err
	}
	var tensors []Tensor
	defer func() {
		for _, t := range tensors {
			b.Free(t)
		}
	}()
	f32 := func(shape ...int) Tensor {
		t := b.NewF32(shape...)
		tensors = append(tensors, t)
		return t
	}
	i32 := func(v []int32, shape ...int) Tensor {
		t := b.NewI32(shape...)
		tensors = append(tensors, t)
		b.WriteI32(t, v)
		return t
	}
	var ids, pos, seq, bounds []int32
	for i, s := range seqs {
		bounds = append(bounds, int32(len(ids)), int32(len(ids)+len(s)))
		ids = append(ids, s...)
		for p := range s {
			pos = append(pos, int32(p))
			seq = append(seq, int32(i))
		}
	}
	T := len(ids)
	sp := m.Layers[0].Mixer.(*Attention).Spec
	e := &encPass{b: b, ops: ops, eps: float32(c.RMSEps), causal: true,
		res: f32(T, D), qkv: f32(T, (sp.Heads+2*sp.KVHeads)*sp.HeadDim), att: f32(T, sp.Heads*sp.HeadDim),
		pos: i32(pos, T), seq: i32(seq, T)}
	act := map[int]Tensor{}
	b.Embed(e.res, m.Embed, i32(ids, T))
	if scale := c.EmbedScale(); scale != 0 {
		b.Scale(e.res, scale)
	}
	for _, ly := range m.Layers {
		mlp := ly.Channel.(*GatedMLP)
		w := mlp.Down.Shape()[1]
		if act[w] == nil {
			act[w] = f32(T, w)
		}
		e.act = act[w]
		ly.Mixer.(*Attention).encode(e)
		mlp.encode(e)
	}
	hidden := f32(T, D)
	b.MatMul(hidden, e.res, id, MatMulFusion{Norm: m.Norm, Eps: e.eps})
	rows, out := T, hidden
	if pool {
		rows = len(seqs)
		out = f32(rows, D)
		ops.Pool(out, hidden, i32(bounds, rows, 2), d.Pooling)
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
