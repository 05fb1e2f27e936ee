package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/source"
)

// nanEngine loads stories260K with NaN in the values [lo, hi) of an F32
// tensor.
func nanEngine(t *testing.T, name string, lo, hi int) *Engine {
	t.Helper()
	w, tok, err := source.Load(stories, "")
	if err != nil {
		t.Fatal(err)
	}
	n := w.Tensors[name]
	if n.DType != loader.F32 {
		t.Fatalf("norm is %v", n.DType)
	}
	data, err := n.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	data = append([]byte(nil), data...)
	for j := lo; j < hi; j++ {
		binary.LittleEndian.PutUint32(data[4*j:], math.Float32bits(float32(math.NaN())))
	}
	n.Data, n.Load = data, nil
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(m, tok, Options{Context: 64})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestNaNLogits: NaN logits end the request with the same *sampler.LogitError
// on every read-back path: the argmax (greedy), the top-k candidates
// (greedy with logprobs) and the full row (temperature 0.7). Greedy decoding
// used to return token 0 and succeed.
func TestNaNLogits(t *testing.T) {
	withLogprobs := greedy(4)
	withLogprobs.Logprobs = new(int)
	*withLogprobs.Logprobs = 2
	sampled := greedy(4)
	sampled.Temperature = 0.7
	seed := int64(1)
	sampled.Seed = &seed
	for _, c := range []struct {
		name string
		p    sampler.Params
	}{{"greedy", greedy(4)}, {"greedy logprobs", withLogprobs}, {"temperature 0.7", sampled}} {
		for _, n := range []struct {
			what   string
			e      *Engine
			logit0 int
		}{
			// a NaN in the final norm makes every logit NaN
			{"all NaN", nanEngine(t, model.NameNorm, 5, 6), 0},
			// a NaN row of the head makes one logit NaN
			{"logit 300 NaN", nanEngine(t, model.NameLMHead, 300*64, 301*64), 300},
		} {
			_, err := n.e.Generate(context.Background(), &Request{Prompt: "Once upon a time", Params: c.p}, func(Token) error { return nil })
			var le *sampler.LogitError
			if !errors.As(err, &le) || le.Value == le.Value || le.Stage != "model" || le.Index != n.logit0 {
				t.Errorf("%s, %s: got %v, want a *sampler.LogitError for logit %d, NaN from the model", c.name, n.what, err, n.logit0)
			}
		}
	}
}
