package engine

import (
	"context"
	"os"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/tokenizer"
)

// qwen35Chat is the tiny Qwen3.5 model with Qwen3.5's chat template (the
// tiny GGUF carries none).
func qwen35Chat(t *testing.T) *Engine {
	t.Helper()
	tmpl, err := os.ReadFile("../tokenizer/internal/jinja/testdata/templates/Qwen3.5-35B-A3B-Q8_0.jinja")
	if err != nil {
		t.Fatal(err)
	}
	g, err := loader.ReadGGUF(qwen35)
	if err != nil {
		t.Fatal(err)
	}
	g.Meta["tokenizer.chat_template"] = string(tmpl)
	tok, err := tokenizer.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(m, tok, Options{Context: 256})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestQwen35Reasoning: with Qwen3.5's template a chat's reply starts
// inside the thinking block (the prompt ends "<think>\n") unless
// enable_thinking is false (the prompt closes an empty block), and a chat
// request generates through the template.
func TestQwen35Reasoning(t *testing.T) {
	e := qwen35Chat(t)
	msgs := []tokenizer.Message{{Role: "user", Content: "What is 17 * 3?"}}
	for _, c := range []struct {
		kwargs map[string]any
		want   ReasoningMode
	}{{nil, ReasoningOpened}, {map[string]any{"enable_thinking": true}, ReasoningOpened}, {map[string]any{"enable_thinking": false}, ReasoningNone}} {
		req := &Request{Messages: msgs, Chat: tokenizer.ChatOptions{Kwargs: c.kwargs}, Params: greedy(4)}
		got, err := e.Reasoning(req)
		if err != nil || got != c.want {
			t.Errorf("kwargs %v: mode %v, %v; want %v", c.kwargs, got, err, c.want)
		}
		res, err := e.Generate(context.Background(), req, func(Token) error { return nil })
		if err != nil || len(res.Tokens) == 0 {
			t.Fatalf("kwargs %v: %v, %+v", c.kwargs, err, res)
		}
	}
}
