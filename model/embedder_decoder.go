package model

import (
	"fmt"

	"wasmllm/loader"
)

// DecoderEmbedder embeds with a model of a decoder family (Qwen3-Embedding
// is `qwen3` with last-token pooling), pooled from the final RMS-normalised
// hidden rows (the LM head's input). A batch runs as one pass of the
// encoder ops, each input causal within its own sequence
// (embedder_batch.go), where the backend and the layer kinds allow;
// otherwise (Qwen3.5's DeltaNet, MoE, a backend without EncoderOps) each
// input runs alone, causally, through Forward and a reused KV cache.
type DecoderEmbedder struct {
	M       *Model
	Pooling Pooling
	// Sequential runs a batch's inputs one after another through Forward
	// even where one batch could (a cross-check of the batched path).
	Sequential bool
	// cache is reused from input to input (each runs from position 0),
	// replaced by a larger one when an input needs it.
	cache KVCache
}

// kvCacheFreer is a backend that frees a KV cache (the GPU's FreeKVCache).
type kvCacheFreer interface{ FreeKVCache(KVCache) }

// cacheFor returns a cache of at least n positions.
func (d *DecoderEmbedder) cacheFor(n int) (KVCache, error) {
	if _, hybrid := d.cache.(*HybridCache); d.cache != nil && d.cache.Capacity() >= n && !hybrid {
		// a KV cache is rewritten from position 0; a recurrent state
		// would not start over
		return d.cache, nil
	}
	if d.cache != nil {
		if f, ok := d.M.Backend().(kvCacheFreer); ok {
			f.FreeKVCache(d.cache)
		}
		d.cache = nil
	}
	size := max(n, 64)
	if mc := d.M.Config.MaxContext; mc > 0 {
		size = min(size, max(mc, n))
	}
	c, err := d.M.NewCache(size)
	if err != nil {
		return nil, err
	}
	d.cache = c
	return c, nil
}

// DecoderPooling reads a decoder GGUF's <arch>.pooling_type (1 mean,
// 3 last; 2 cls is refused: a causal model's first row sees one token).
// ok is false when the file has none: it is not an embedding model.
func DecoderPooling(g *loader.GGUF) (p Pooling, ok bool, err error) {
	arch, _ := g.String("general.architecture")
	v, has := g.Int(arch + ".pooling_type")
	if !has || v == 0 {
		return "", false, nil
	}
	switch v {
	case 1:
		return PoolMean, true, nil
	case 3:
		return PoolLast, true, nil
	}
	return "", false, &loader.FormatError{File: g.File, Field: "metadata " + arch + ".pooling_type", Offset: -1,
		Err: fmt.Errorf("%w: pooling type %d for a causal model", loader.ErrUnsupported, v)}
}

// MaxTokens is the most tokens one input may have.
func (d *DecoderEmbedder) MaxTokens() int { return d.M.Config.MaxContext }

// Hidden returns every token's final hidden row of one input.
func (d *DecoderEmbedder) Hidden(ids []int32) ([][]float32, error) {
	if err := d.checkInput(0, ids); err != nil {
		return nil, err
	}
	if ops, ok := d.batchable(); ok && !d.Sequential {
		return d.runBatch(ops, [][]int32{ids}, false)
	}
	cache, err := d.cacheFor(len(ids))
	if err != nil {
		return nil, err
	}
	_, hidden, err := d.M.ForwardHidden(cache, ids, 0, false)
	if err != nil {
		return nil, err
	}
	D := d.M.Config.Hidden
	flat := make([]float32, len(ids)*D)
	if err := d.M.Backend().ReadF32(hidden, flat); err != nil {
		return nil, err
	}
	rows := make([][]float32, len(ids))
	for i := range rows {
		rows[i] = flat[i*D : (i+1)*D : (i+1)*D]
	}
	return rows, nil
}

func (d *DecoderEmbedder) checkInput(i int, ids []int32) error {
	switch {
	case len(ids) == 0:
		return &InputError{Index: i, Reason: "no tokens"}
	case d.MaxTokens() > 0 && len(ids) > d.MaxTokens():
		return &InputError{Index: i, Tokens: len(ids), Max: d.MaxTokens(), Reason: fmt.Sprintf("over the model's %d tokens", d.MaxTokens())}
	}
	for _, id := range ids {
		if id < 0 || int(id) >= d.M.Config.Vocab {
			return &InputError{Index: i, Tokens: len(ids), Reason: fmt.Sprintf("token id %d outside the vocabulary of %d", id, d.M.Config.Vocab)}
		}
	}
	return nil
}

// Embed returns each input's pooled vector, not normalised.
func (d *DecoderEmbedder) Embed(seqs [][]int32) ([][]float32, error) {
	if len(seqs) == 0 {
		return nil, &InputError{Reason: "no inputs"}
	}
	for i, s := range seqs {
		if err := d.checkInput(i, s); err != nil {
			return nil, err
		}
	}
	if ops, ok := d.batchable(); ok && !d.Sequential {
		return d.runBatch(ops, seqs, true)
	}
	out := make([][]float32, len(seqs))
	for i, s := range seqs {
		rows, err := d.Hidden(s)
		if err != nil {
			return nil, err
		}
		switch d.Pooling {
		case PoolLast:
			out[i] = rows[len(rows)-1]
		default:
			v := make([]float32, len(rows[0]))
			for j := range v {
				var sum float64
				for _, r := range rows {
					sum += float64(r[j])
				}
				v[j] = float32(sum / float64(len(rows)))
			}
			out[i] = v
		}
	}
	return out, nil
}
