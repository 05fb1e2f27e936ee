package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/grammar"
	"wasmllm/internal/testkit"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
)

// hostOnly hides the CPU backend's MaskLogits, so the engine masks the
// full row on the host.
type hostOnly struct{ *cpu.Backend }

var _ model.Backend = hostOnly{}

func loadOn(t *testing.T, path string, b model.Backend) *Engine {
	t.Helper()
	e, err := Load(path, b, LoadOptions{Options: Options{Context: 512, PrefillChunk: 16}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var testModels = []string{stories, "../testdata/models/tiny-llama3-q8_0.gguf", "../testdata/models/tiny-qwen3-q4_0.gguf", "../testdata/models/tiny-qwen3moe-q8_0.gguf"}

// TestGrammarOutput: every output of a constrained request is in the
// grammar's language and ends where it may, on every test model, with
// sampling on; and the backend's mask (model.LogitMasker) and the host's
// full-row mask give the same tokens for every sampler option.
func TestGrammarOutput(t *testing.T) {
	g, err := grammar.Compile(`root ::= "{\"n\": " [1-9] [0-9]{0,3} ", \"s\": \"" [a-z ]{1,12} "\"}"`)
	if err != nil {
		t.Fatal(err)
	}
	configs := []struct {
		name string
		set  func(p *sampler.Params)
	}{
		{"greedy", func(p *sampler.Params) { p.Temperature = 0 }},
		{"greedy logprobs", func(p *sampler.Params) { p.Temperature = 0; n := 2; p.Logprobs = &n }},
		{"t1", func(p *sampler.Params) {}},
		{"top_k 3", func(p *sampler.Params) { p.TopK = 3 }},
		{"top_k 40 min_p", func(p *sampler.Params) { p.TopK = 40; p.MinP = 0.05 }},
		{"top_p", func(p *sampler.Params) { p.TopP = 0.8; p.Temperature = 0.7 }},
		{"penalties", func(p *sampler.Params) { p.RepetitionPenalty = 1.3; p.FrequencyPenalty = 0.5; p.PresencePenalty = 0.5 }},
		{"logit_bias", func(p *sampler.Params) { p.LogitBias = map[int32]float64{10: 50, 20: -50} }},
	}
	for _, path := range testModels {
		dev, host := loadOn(t, path, cpu.New(0)), loadOn(t, path, hostOnly{cpu.New(0)})
		name := path[strings.LastIndex(path, "/")+1:]
		for _, c := range configs {
			for seed := int64(1); seed <= 3; seed++ {
				p := sampler.DefaultParams()
				p.MaxTokens = 80
				p.Seed = &seed
				c.set(&p)
				req := &Request{Prompt: "Once upon a time", Params: p, Grammar: g}
				a, b := gen(t, dev, req), gen(t, host, req)
				what := fmt.Sprintf("%s %s seed %d", name, c.name, seed)
				if !slices.Equal(a.Tokens, b.Tokens) {
					t.Fatalf("%s: backend mask %v, host mask %v", what, a.Tokens, b.Tokens)
				}
				if a.Finish.Reason != sampler.FinishStop || !matches(g, a.Text) {
					t.Errorf("%s: finish %+v, text %q is not a whole sentence", what, a.Finish, a.Text)
				}
				if a.MaskSteps == 0 {
					t.Errorf("%s: no mask steps counted", what)
				}
				if c.name == "greedy" && dev.Stats.FullRows != 0 {
					t.Errorf("%s: greedy read %d full rows", what, dev.Stats.FullRows)
				}
			}
		}
	}
}

// TestGrammarDeadEnd: a grammar no token can continue ends the request
// with FinishGrammar, as does one whose only tokens the other processors
// remove; neither hangs.
func TestGrammarDeadEnd(t *testing.T) {
	e := loadOn(t, stories, cpu.New(0))
	// stories260K has no token for 日: its three bytes come from byte
	// fallback tokens, each one ending inside the character.
	g, err := grammar.Compile(`root ::= "a" "日"`)
	if err != nil {
		t.Fatal(err)
	}
	p := greedy(20)
	res := gen(t, e, &Request{Prompt: "Once", Params: p, Grammar: g})
	if res.Finish.Reason != sampler.FinishStop || res.Text != "a日" || len(res.Tokens) < 4 {
		t.Errorf("finish %+v text %q tokens %v", res.Finish, res.Text, res.Tokens)
	}
	// Every allowed token banned by allowed_token_ids.
	g2, err := grammar.Compile(`root ::= "b"+`)
	if err != nil {
		t.Fatal(err)
	}
	p.AllowedTokenIDs = []int32{5}
	res = gen(t, e, &Request{Prompt: "Once", Params: p, Grammar: g2})
	if res.Finish.Reason != sampler.FinishGrammar || len(res.Tokens) != 0 {
		t.Errorf("finish %+v tokens %v", res.Finish, res.Tokens)
	}
	// ignore_eos with a grammar that has ended: stop, not a dead end.
	g3, _ := grammar.Compile(`root ::= "ab"`)
	p = greedy(20)
	p.IgnoreEOS = true
	res = gen(t, e, &Request{Prompt: "Once", Params: p, Grammar: g3})
	if res.Finish.Reason != sampler.FinishStop || res.Text != "ab" {
		t.Errorf("ignore_eos: finish %+v text %q", res.Finish, res.Text)
	}
}

// qwenChat loads tiny-qwen3 with the Qwen3 chat template.
func qwenChat(t *testing.T) *Engine {
	t.Helper()
	cfg, err := os.ReadFile("../testdata/tokenizer/qwen3/tokenizer_config.json")
	testkit.Need(t, err == nil, "run make testdata: %v", err)
	var c struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tok, err := os.ReadFile("../testdata/hf/tiny-qwen3/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{}`), 0o644)
	os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(c.ChatTemplate), 0o644)
	e, err := Load("../testdata/hf/tiny-qwen3", cpu.New(0), LoadOptions{Options: Options{Context: 512}, Tokenizer: dir})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestGrammarReasoning: with Qwen3's template, the thinking block stays
// outside the constraint (the text may start with <think>...</think>),
// and with enable_thinking off the grammar applies from the first token.
func TestGrammarReasoning(t *testing.T) {
	e := qwenChat(t)
	g, err := grammar.Compile(`root ::= "[" [0-9]{1,3} "]"`)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []tokenizer.Message{{Role: "user", Content: "Pick a number"}}
	blocks := 0
	for _, think := range []bool{false, true} {
		for seed := int64(1); seed <= 6; seed++ {
			p := sampler.DefaultParams()
			p.MaxTokens, p.Seed = 60, &seed
			// Favour "<" so that some samples open a thinking block.
			if id, ok := e.Tok.TokenID("<"); ok {
				p.LogitBias = map[int32]float64{id: 5}
			}
			req := &Request{Messages: msgs, Params: p, Grammar: g,
				Chat: tokenizer.ChatOptions{Kwargs: map[string]any{"enable_thinking": think}}}
			res := gen(t, e, req)
			body := res.Text
			if think {
				if rest, ok := strings.CutPrefix(body, "<think>"); ok {
					blocks++
					i := strings.Index(rest, "</think>")
					if i < 0 {
						if res.Finish.Reason != sampler.FinishLength {
							t.Errorf("seed %d: an open thinking block ended with %+v: %q", seed, res.Finish, body)
						}
						continue
					}
					body = strings.TrimLeft(rest[i+len("</think>"):], " \t\r\n")
				}
			}
			if !matches(g, body) || res.Finish.Reason != sampler.FinishStop {
				t.Errorf("thinking %v seed %d: %q (finish %+v)", think, seed, res.Text, res.Finish)
			}
		}
	}
	if blocks == 0 {
		t.Error("no sample opened a thinking block: the test does not cover it")
	}
}

func matches(g *grammar.Grammar, s string) bool {
	m := g.NewMatcher()
	return m.AcceptString(s) && m.CanEnd()
}
