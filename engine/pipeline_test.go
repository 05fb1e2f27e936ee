package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"wasmllm/cpu"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/source"
)

// asyncCPU is the CPU backend as a model.AsyncReader, so the engine
// pipelines greedy decode on it as it does on WebGPU: a read started
// takes the values then (a GPU's read is ordered after the work submitted
// before it and before the work submitted after), and Wait hands them
// over.
type asyncCPU struct{ *cpu.Backend }

type readDone []int32

func (r readDone) Wait(dst []int32) error { copy(dst, r); return nil }

func (b asyncCPU) StartReadI32(t model.Tensor) (model.PendingI32, error) {
	n := 1
	for _, d := range t.Shape() {
		n *= d
	}
	v := make([]int32, n)
	if err := b.ReadI32(t, v); err != nil {
		return nil, err
	}
	return readDone(v), nil
}

// loadAsync is load on asyncCPU.
func loadAsync(t *testing.T, path string, ctx int) *Engine {
	t.Helper()
	e, err := Load(path, asyncCPU{cpu.New(0)}, LoadOptions{Options: Options{Context: ctx, PrefillChunk: 7}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRecurrentPipelined: greedy decode on a model with recurrent state
// submits each step before the previous token is read back, and a stop
// found one step late (the step after it already run) leaves the state at
// the cached tokens: a chat's second turn reuses every cached token and
// gives the tokens of a fresh run, after a stop token, a stop string's
// token, a cancel and an emit error alike; the golden's greedy ids come
// out unchanged.
func TestRecurrentPipelined(t *testing.T) {
	e := loadAsync(t, qwen35, 128)
	if _, ok := e.Model.Backend().(model.AsyncReader); !ok {
		t.Fatal("the test backend reads synchronously")
	}
	res := gen(t, e, &Request{Tokens: qwen35Prompt, Params: greedy(16)})
	if !slices.Equal(res.Tokens, qwen35Greedy) {
		t.Fatalf("greedy %v, want %v", res.Tokens, qwen35Greedy)
	}
	if e.Stats.StepsAhead < 14 {
		t.Fatalf("%d of %d decode steps went ahead", e.Stats.StepsAhead, e.Stats.DecodeSteps)
	}
	h := e.Cache().(*model.HybridCache)
	check := func(name string, first *Result, firstErr error, prompt []int32) {
		t.Helper()
		if h.Len() != len(e.cached) {
			t.Fatalf("%s: the state holds %d tokens, the cache %d", name, h.Len(), len(e.cached))
		}
		// The next turn: the prompt, the reply but its last token (never
		// run), and more.
		next := slices.Concat(prompt, first.Tokens, []int32{511, 33, 44})
		ahead := e.Stats.StepsAhead
		res := gen(t, e, &Request{Tokens: next, Params: greedy(6)})
		if want := fresh(t, next, 6); !slices.Equal(res.Tokens, want) {
			t.Errorf("%s (%v): next turn %v, a fresh run gives %v", name, firstErr, res.Tokens, want)
		}
		if want := len(prompt) + len(first.Tokens) - 1; res.Usage.CachedTokens != want {
			t.Errorf("%s: next turn reused %d cached tokens, want %d", name, res.Usage.CachedTokens, want)
		}
		if e.Stats.StepsAhead == ahead {
			t.Errorf("%s: next turn: no step went ahead", name)
		}
	}

	// A stop token found after the step that consumes it was submitted.
	prompt := slices.Concat(qwen35Prompt, []int32{9})
	plain := fresh(t, prompt, 12)
	at := 4
	for slices.Contains(plain[:at], plain[at]) {
		at++
	}
	p := greedy(12)
	p.StopTokenIDs = []int32{plain[at]}
	first := gen(t, e, &Request{Tokens: prompt, Params: p})
	if len(first.Tokens) != at+1 || first.Finish.StopToken != plain[at] {
		t.Fatalf("stop token request: %v, %+v", first.Tokens, first.Finish)
	}
	check("stop token", first, nil, prompt)

	// A cancel and an emit error, each after three tokens.
	for _, c := range []string{"cancel", "emit error"} {
		prompt := slices.Concat(qwen35Prompt, []int32{int32(len(c))})
		ctx, cancel := context.WithCancel(context.Background())
		stop := errors.New("stop")
		var n int
		p := greedy(12)
		p.IgnoreEOS = true
		first, err := e.Generate(ctx, &Request{Tokens: prompt, Params: p}, func(Token) error {
			if n++; n == 3 {
				if c == "cancel" {
					cancel()
				} else {
					return stop
				}
			}
			return nil
		})
		cancel()
		if !errors.Is(err, context.Canceled) && !errors.Is(err, stop) {
			t.Fatalf("%s: %v after %v", c, err, first.Tokens)
		}
		check(c, first, err, prompt)
	}
}

// TestRecurrentPipelinedNaN: a NaN row found after the step ahead was
// submitted (on the argmax of -1) ends the request with the sampler's
// *sampler.LogitError, as without pipelining, and leaves the state at the
// cached tokens.
func TestRecurrentPipelinedNaN(t *testing.T) {
	w, tok, err := source.Load(qwen35, "")
	if err != nil {
		t.Fatal(err)
	}
	n := w.Tensors[model.NameNorm]
	data, err := n.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	data = append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(data[4*5:], math.Float32bits(float32(math.NaN())))
	n.Data, n.Load = data, nil
	m, err := model.Build(asyncCPU{cpu.New(0)}, w)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(m, tok, Options{Context: 64, PrefillChunk: 5})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Generate(context.Background(), &Request{Tokens: qwen35Prompt, Params: greedy(4)}, func(Token) error { return nil })
	var le *sampler.LogitError
	if !errors.As(err, &le) || le.Value == le.Value || le.Stage != "model" || le.Index != 0 {
		t.Errorf("got %v, want a *sampler.LogitError for logit 0, NaN from the model", err)
	}
	if h := e.Cache().(*model.HybridCache); h.Len() != len(e.cached) || h.Len() != len(qwen35Prompt) {
		t.Errorf("the state holds %d tokens, the cache %d, the prompt %d", h.Len(), len(e.cached), len(qwen35Prompt))
	}
}
