//go:build js

package gpu

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
)

// TestPipelinedStop: a stop token found in a pipelined greedy decode (one
// step late: the step that consumes it is already submitted) discards that
// step without harm. The reply ends where the CPU engine's does, and the
// next request, which continues the conversation and reuses the cache,
// generates what the CPU engine generates, with the same cached tokens. A
// sampled request stays synchronous (no step ahead).
func TestPipelinedStop(t *testing.T) {
	b := modelBackend(t)
	g := golden.Read(t, filepath.Join(goldenDir, "tiny-llama3-q4_0.golden"))
	path := filepath.Join(goldenDir, g.Model)
	opts := engine.LoadOptions{Options: engine.Options{Context: 96}}
	ge, err := engine.Load(path, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer freeModel(b, ge.Model)
	ce, err := engine.Load(path, cpu.New(0), opts)
	if err != nil {
		t.Fatal(err)
	}
	run := func(e *engine.Engine, tokens []int32, p sampler.Params) *engine.Result {
		t.Helper()
		res, err := e.Generate(context.Background(), &engine.Request{Tokens: tokens, Params: p}, func(engine.Token) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	p := sampler.DefaultParams()
	p.Temperature, p.MaxTokens, p.IgnoreEOS = 0, 16, true
	p.StopTokenIDs = []int32{g.Greedy[5]}
	ahead0 := ge.Stats.StepsAhead
	gr, cr := run(ge, g.Tokens, p), run(ce, g.Tokens, p)
	if !slices.Equal(gr.Tokens, cr.Tokens) || gr.Finish != cr.Finish || gr.Finish.Reason != sampler.FinishStop {
		t.Fatalf("stopped reply: gpu %v %+v, cpu %v %+v", gr.Tokens, gr.Finish, cr.Tokens, cr.Finish)
	}
	if slices.Index(g.Greedy, g.Greedy[5]) != len(gr.Tokens)-1 {
		t.Fatalf("reply %v does not end at the first %d of %v", gr.Tokens, g.Greedy[5], g.Greedy)
	}
	if n := ge.Stats.StepsAhead - ahead0; n != int64(len(gr.Tokens)) {
		t.Errorf("%d steps went ahead for %d tokens (the last one's is the discarded step)", n, len(gr.Tokens))
	}

	// The conversation goes on: the reply and a few more ids.
	next := append(append(slices.Clone(g.Tokens), gr.Tokens...), g.Tokens[1:4]...)
	p.StopTokenIDs = nil
	p.MaxTokens = 12
	gr2, cr2 := run(ge, next, p), run(ce, next, p)
	if !slices.Equal(gr2.Tokens, cr2.Tokens) || gr2.Usage.CachedTokens != cr2.Usage.CachedTokens {
		t.Fatalf("the next request: gpu %v (cached %d), cpu %v (cached %d)", gr2.Tokens, gr2.Usage.CachedTokens, cr2.Tokens, cr2.Usage.CachedTokens)
	}
	if gr2.Usage.CachedTokens != len(g.Tokens)+len(gr.Tokens)-1 {
		t.Errorf("cached %d tokens, want the prompt and the reply but its last token (%d)", gr2.Usage.CachedTokens, len(g.Tokens)+len(gr.Tokens)-1)
	}

	// Sampling needs more than the argmax on the host: no step goes ahead.
	p.Temperature, p.TopK = 1, 0
	seed := int64(7)
	p.Seed = &seed
	ahead1 := ge.Stats.StepsAhead
	gs, cs := run(ge, g.Tokens, p), run(ce, g.Tokens, p)
	if ge.Stats.StepsAhead != ahead1 {
		t.Errorf("a sampled request sent %d steps ahead", ge.Stats.StepsAhead-ahead1)
	}
	if !slices.Equal(gs.Tokens, cs.Tokens) {
		t.Errorf("seeded sample: gpu %v, cpu %v", gs.Tokens, cs.Tokens)
	}
}

// TestPipelinedPerLayerOnHost: a Gemma 4 model whose per-layer table is
// kept on the host reads its ids there, so its greedy decode does not go
// ahead of the readback (ForwardFrom would refuse), and still gives the
// golden's greedy ids; with the table on the GPU the same request goes
// ahead.
func TestPipelinedPerLayerOnHost(t *testing.T) {
	b := modelBackend(t)
	g := golden.Read(t, "../testdata/gemma/golden/tiny-gemma4-q4_0.golden")
	f, err := loader.ReadGGUF(g.ModelPath())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, onHost := range []bool{true, false} {
		w := goldenWeights(t, g)
		w.PerLayerOnHost = onHost
		m, err := model.Build(b, w)
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(m, tok, engine.Options{Context: 64})
		if err != nil {
			t.Fatal(err)
		}
		p := sampler.DefaultParams()
		p.Temperature, p.MaxTokens, p.IgnoreEOS = 0, len(g.Greedy), true
		res, err := e.Generate(context.Background(), &engine.Request{Tokens: g.Tokens, Params: p}, func(engine.Token) error { return nil })
		freeModel(b, m)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Tokens, g.Greedy) {
			t.Errorf("table on the host %v: greedy %v, golden %v", onHost, res.Tokens, g.Greedy)
		}
		if ahead := e.Stats.StepsAhead; (ahead == 0) != onHost {
			t.Errorf("table on the host %v: %d steps went ahead", onHost, ahead)
		}
	}
}
