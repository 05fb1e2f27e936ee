//go:build js

package gpu

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/sampler"
)

// nopProcessor forces the sampler onto the full row without changing it.
type nopProcessor struct{}

func (nopProcessor) Process([]float32, []int32) error { return nil }

// TestSampleCandidatesOnGPU: seeded sampling with top_k, top_p, min_p,
// temperature and penalties takes the GPU's top-k candidates (a few KB back
// per token, no full row) and gives the same tokens as the full-row path
// on the GPU and as the CPU backend.
func TestSampleCandidatesOnGPU(t *testing.T) {
	b := modelBackend(t)
	path := filepath.Join(goldenDir, "../models/tiny-qwen3moe-q4_0.gguf")
	opts := engine.LoadOptions{Options: engine.Options{Context: 64}}
	seed := int64(11)
	p := sampler.DefaultParams()
	p.Temperature, p.TopK, p.TopP, p.MinP, p.MaxTokens, p.Seed, p.IgnoreEOS = 0.8, 20, 0.95, 0.01, 12, &seed, true
	p.FrequencyPenalty, p.RepetitionPenalty = 0.5, 1.2
	prompt := []int32{1, 17, 42, 99, 311, 7}
	run := func(e *engine.Engine, p sampler.Params) *engine.Result {
		t.Helper()
		res, err := e.Generate(context.Background(), &engine.Request{Tokens: prompt, Params: p}, func(engine.Token) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ge, err := engine.Load(path, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer freeModel(b, ge.Model)
	before := b.Device().Stats()
	cand := run(ge, p)
	dev := b.Device().Stats().Sub(before)
	perToken := float64(dev.BytesRead) / float64(len(cand.Tokens))
	t.Logf("candidates: %d tokens, %.0f bytes read per token, %d full rows, %d submits", len(cand.Tokens), perToken, ge.Stats.FullRows, dev.Submits)
	if ge.Stats.FullRows != 0 || perToken > 4096 || dev.Submits != int64(len(cand.Tokens)) || dev.Maps != int64(len(cand.Tokens)) {
		t.Errorf("candidate path: %d full rows, %.0f bytes per token, %d submits and %d maps for %d tokens (want one each per token)",
			ge.Stats.FullRows, perToken, dev.Submits, dev.Maps, len(cand.Tokens))
	}

	full := p
	full.Processors = []sampler.LogitsProcessor{nopProcessor{}}
	ge.Reset()
	fullRes := run(ge, full)
	if ge.Stats.FullRows == 0 {
		t.Error("the full-row path read no full rows")
	}
	ce, err := engine.Load(path, cpu.New(0), opts)
	if err != nil {
		t.Fatal(err)
	}
	cpuRes := run(ce, p)
	if !slices.Equal(cand.Tokens, fullRes.Tokens) || !slices.Equal(cand.Tokens, cpuRes.Tokens) {
		t.Errorf("GPU candidates %v\nGPU full row   %v\nCPU            %v", cand.Tokens, fullRes.Tokens, cpuRes.Tokens)
	}
}
