package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"wasmllm/model"
)

const qwen35 = "../testdata/qwen35/models/tiny-qwen35-f32.gguf"

// qwen35Prompt is the goldens' prompt; qwen35Greedy its 16 greedy ids
// (testdata/qwen35/golden/tiny-qwen35-f32.golden).
var (
	qwen35Prompt = []int32{1, 17, 42, 99, 311, 7, 255, 480, 3, 64, 128, 200}
	qwen35Greedy = []int32{397, 435, 288, 506, 394, 113, 165, 85, 324, 51, 200, 93, 88, 485, 485, 285}
)

// fresh runs ids greedily for n tokens on a new engine.
func fresh(t *testing.T, ids []int32, n int) []int32 {
	t.Helper()
	return gen(t, load(t, qwen35, 128), &Request{Tokens: ids, Params: greedy(n)}).Tokens
}

// TestRecurrentTurns: on a model with recurrent state, each request gives
// the tokens of a fresh run: the golden's greedy ids; a next turn that
// extends the reply (the live state: every cached token reused); the same
// prompt again and one that extends the first prompt only (the
// checkpoint); one that diverges early (from zero); a prompt shorter than
// the cache.
func TestRecurrentTurns(t *testing.T) {
	e := load(t, qwen35, 128)
	first := gen(t, e, &Request{Tokens: qwen35Prompt, Params: greedy(8)})
	if !slices.Equal(first.Tokens, qwen35Greedy[:8]) {
		t.Fatalf("first turn %v, want %v", first.Tokens, qwen35Greedy[:8])
	}
	run := func(name string, ids []int32, cached int) *Result {
		t.Helper()
		res := gen(t, e, &Request{Tokens: ids, Params: greedy(6)})
		if want := fresh(t, ids, 6); !slices.Equal(res.Tokens, want) {
			t.Errorf("%s: %v, a fresh run gives %v", name, res.Tokens, want)
		}
		if res.Usage.CachedTokens != cached {
			t.Errorf("%s: %d cached tokens, want %d", name, res.Usage.CachedTokens, cached)
		}
		return res
	}
	// The checkpoint: the first prompt up to its last token.
	p2 := slices.Concat(qwen35Prompt, []int32{9, 9})
	r2 := run("first prompt extended", p2, len(qwen35Prompt)-1)
	// The live state: the prompt and the reply but its last token (sampled,
	// never run).
	p3 := slices.Concat(p2, r2.Tokens, []int32{511, 510, 33, 44})
	run("next turn", p3, len(p2)+len(r2.Tokens)-1)
	run("same prompt again", p3, len(p3)-1)
	run("diverges early", slices.Concat(qwen35Prompt[:5], []int32{8, 8, 8}), 0)
	run("a prefix of the cache", qwen35Prompt[:4], 0)
}

// TestRecurrentCancel: a request cancelled during its decode, or stopped by
// emit, leaves a state the next request reuses correctly.
func TestRecurrentCancel(t *testing.T) {
	e := load(t, qwen35, 128)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := e.Generate(ctx, &Request{Tokens: qwen35Prompt, Params: greedy(12)}, func(Token) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	stop := errors.New("stop")
	if _, err := e.Generate(context.Background(), &Request{Tokens: slices.Concat(qwen35Prompt, qwen35Greedy[:3], []int32{5}), Params: greedy(12)},
		func(Token) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("stopped request: %v", err)
	}
	next := slices.Concat(qwen35Prompt, qwen35Greedy[:3], []int32{5, 6, 7})
	res := gen(t, e, &Request{Tokens: next, Params: greedy(5)})
	if want := fresh(t, next, 5); !slices.Equal(res.Tokens, want) {
		t.Errorf("after cancel: %v, a fresh run gives %v", res.Tokens, want)
	}
	if h := e.Cache().(*model.HybridCache); h.Len() != len(e.cached) {
		t.Errorf("the state holds %d tokens, the cache %d", h.Len(), len(e.cached))
	}
}
