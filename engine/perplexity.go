package engine

import (
	"errors"
	"fmt"
	"math"

	"wasmllm/loader"
	"wasmllm/model"
)

// Perplexity is a teacher-forced evaluation of a model on a text.
type Perplexity struct {
	KVDType loader.DType
	Tokens  int     // the ids read; Tokens-1 were predicted
	NLL     float64 // mean negative log-likelihood of each next id, nats
	PPL     float64 // exp(NLL)
}

// EvalPerplexity runs ids through m, teacher-forced, in batches of chunk
// tokens (a chunked prefill: the cache holds the earlier ones), with a KV
// cache of type kv, and scores each next id by its log-softmax. ids must
// fit the model's cache of len(ids) positions.
func EvalPerplexity(m *model.Model, kv loader.DType, ids []int32, chunk int) (*Perplexity, error) {
	if len(ids) < 2 {
		return nil, errors.New("engine: perplexity of fewer than two tokens")
	}
	chunk = max(chunk, 1)
	cache, err := m.NewCacheOf(kv, len(ids))
	if err != nil {
		return nil, err
	}
	if f, ok := m.Backend().(interface{ FreeKVCache(model.KVCache) }); ok {
		defer f.FreeKVCache(cache)
	}
	if got := model.KVDTypeOf(cache); got != kv {
		return nil, fmt.Errorf("engine: perplexity with a %v cache: the backend keeps %v", kv, got)
	}
	V := m.Config.Vocab
	var nll float64
	row := make([]float32, 0)
	for p := 0; p < len(ids)-1; p += chunk {
		n := min(chunk, len(ids)-1-p)
		logits, err := m.Forward(cache, ids[p:p+n], p, true)
		if err != nil {
			return nil, err
		}
		if cap(row) < n*V {
			row = make([]float32, n*V)
		}
		row = row[:n*V]
		if err := m.Backend().ReadF32(logits, row); err != nil {
			return nil, err
		}
		for i := range n {
			nll -= logSoftmaxAt(row[i*V:(i+1)*V], int(ids[p+i+1]))
		}
	}
	nll /= float64(len(ids) - 1)
	return &Perplexity{KVDType: kv, Tokens: len(ids), NLL: nll, PPL: math.Exp(nll)}, nil
}

// logSoftmaxAt is log(softmax(row)[i]), in float64.
func logSoftmaxAt(row []float32, i int) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - m)
	}
	return float64(row[i]) - m - math.Log(s)
}
