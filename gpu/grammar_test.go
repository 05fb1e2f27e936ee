//go:build js

package gpu

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/grammar"
	"wasmllm/sampler"
)

// TestGrammarOnGPU: constrained decoding on the GPU masks the logits where
// they are: a greedy step still reads back 4 bytes (one submit, one map),
// the tokens equal the CPU backend's for greedy and for seeded sampling
// through the top-k candidates, and every reply is in the grammar; so do
// replies to any JSON object fitted into 24 tokens (Request.FitGrammar),
// whose budgeted masks go up the same way.
func TestGrammarOnGPU(t *testing.T) {
	// A backend of its own: the shared one's scratch buffers stay sized as
	// the other tests expect (their submit counts include growing them).
	b, berr := NewBackend(device(t), sharedPipelines(device(t), BackendOptions{}))
	if berr != nil {
		t.Fatal(berr)
	}
	g, err := grammar.Compile(`root ::= "{\"id\": " [1-9] [0-9]{0,4} ", \"tag\": \"" [a-z]{1,8} "\"}"`)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(5)
	sampled := sampler.DefaultParams()
	sampled.Temperature, sampled.TopK, sampled.Seed, sampled.MaxTokens = 0.9, 8, &seed, 60
	greedy := sampler.DefaultParams()
	greedy.Temperature, greedy.MaxTokens = 0, 60
	anyJSON, err := grammar.Compile(grammar.JSONGBNF)
	if err != nil {
		t.Fatal(err)
	}
	fitGreedy, fitSampled := greedy, sampled
	fitGreedy.MaxTokens, fitSampled.MaxTokens = 24, 24
	reqs := []engine.Request{
		{Prompt: "Once upon a time", Params: greedy, Grammar: g},
		{Prompt: "Once upon a time", Params: sampled, Grammar: g},
		{Prompt: "Once upon a time", Params: fitGreedy, Grammar: anyJSON, FitGrammar: true},
		{Prompt: "Once upon a time", Params: fitSampled, Grammar: anyJSON, FitGrammar: true},
	}
	for _, name := range []string{"stories260K.gguf", "tiny-llama3-q4_0.gguf", "tiny-qwen3moe-q8_0.gguf"} {
		path := filepath.Join(goldenDir, "../models", name)
		opts := engine.LoadOptions{Options: engine.Options{Context: 128}}
		ge, err := engine.Load(path, b, opts)
		if err != nil {
			t.Fatal(err)
		}
		ce, err := engine.Load(path, cpu.New(0), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range reqs {
			p := req.Params
			before := b.Device().Stats()
			rows := ge.Stats.FullRows
			gr, err := ge.Generate(context.Background(), &req, func(engine.Token) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			dev := b.Device().Stats().Sub(before)
			cr, err := ce.Generate(context.Background(), &req, func(engine.Token) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(gr.Tokens, cr.Tokens) || gr.Finish != cr.Finish {
				t.Errorf("%s T=%v fit=%v: GPU %v %+v\nCPU %v %+v", name, p.Temperature, req.FitGrammar, gr.Tokens, gr.Finish, cr.Tokens, cr.Finish)
			}
			m := req.Grammar.NewMatcher()
			if !m.AcceptString(gr.Text) || !m.CanEnd() || gr.Finish.Reason != sampler.FinishStop || len(gr.Tokens) >= p.MaxTokens {
				t.Errorf("%s: %q (%+v) is not a whole sentence", name, gr.Text, gr.Finish)
			}
			if ge.Stats.FullRows != rows {
				t.Errorf("%s T=%v: %d full rows read", name, p.Temperature, ge.Stats.FullRows-rows)
			}
			if p.Temperature == 0 {
				n := int64(len(gr.Tokens))
				t.Logf("%s greedy: %d tokens, %d bytes read, %d submits, %d maps", name, n, dev.BytesRead, dev.Submits, dev.Maps)
				if dev.BytesRead != 4*n || dev.Maps != n || dev.Submits != n {
					t.Errorf("%s greedy: %d bytes read, %d submits and %d maps for %d tokens; want 4 bytes, one submit and one map per token (the mask's upload joins the step's submit)", name, dev.BytesRead, dev.Submits, dev.Maps, n)
				}
			}
		}
		freeModel(b, ge.Model)
	}
}
