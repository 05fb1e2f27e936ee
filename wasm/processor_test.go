//go:build !js

package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/api"
	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/internal/testkit/browsertest"
	"wasmllm/sampler"
)

// These tests run logits_processors (JavaScript functions in the page) on
// the CPU backend in Chromium and compare with the Go engine run natively
// on the same model folder with the same processor written in Go: the
// sampler gets the same rows, so the tokens must be identical.

// goProcessor is a sampler.LogitsProcessor from a function.
type goProcessor func(row []float32, out []int32) error

func (f goProcessor) Process(row []float32, out []int32) error { return f(row, out) }

// nativeRun answers the completion or chat request body natively, as the
// worker parses it, with procs as the custom processors.
func nativeRun(t *testing.T, e *engine.Engine, chat bool, body map[string]any, procs ...sampler.LogitsProcessor) *engine.Result {
	t.Helper()
	parse := api.ParseCompletion
	if chat {
		parse = api.ParseChat
	}
	r, err := parse([]byte(jsValue(body)))
	if err != nil {
		t.Fatal(err)
	}
	r.Engine.Params.Processors = procs
	e.Reset()
	res, err := e.Generate(context.Background(), &r.Engine, func(engine.Token) error { return nil })
	if err != nil {
		t.Fatalf("native %v: %v", body, err)
	}
	return res
}

// procRun is what a page request with processors collected.
type procRun struct {
	Text   string               `json:"text"`
	Finish string               `json:"finish"`
	Tokens int                  `json:"tokens"` // usage.completion_tokens
	Calls  [][]int32            `json:"calls"`  // outputIds of every call
	Row0   []float32            `json:"row0"`   // the row of the first call, as the processors got it
	Error  *browsertest.JSError `json:"error"`
}

// runProcs runs one request in the page with logits_processors set to the
// JavaScript array expression procs, which may use record(logits, ids)
// to fill calls and row0. Chat requests take the reply's content.
func runProcs(t *testing.T, b *browsertest.Browser, chat bool, body map[string]any, procs string) *procRun {
	t.Helper()
	create := "engine.completions.create"
	if chat {
		create = "engine.chat.completions.create"
	}
	var r procRun
	b.MustRun(`(async () => {
		const run = {text: "", finish: "", tokens: 0, calls: [], row0: null, error: null};
		const record = (l, ids) => { if (!ids.length) run.row0 = Array.from(l); run.calls.push(ids.slice()); };
		const req = {...`+jsValue(body)+`, logits_processors: `+procs+`};
		try {
			if (req.stream) {
				req.stream_options = {include_usage: true};
				for await (const c of await `+create+`(req)) {
					const ch = c.choices[0];
					if (!ch) { run.tokens = c.usage.completion_tokens; continue; } // the usage chunk
					run.text += (ch.delta ? ch.delta.content : ch.text) || "";
					if (ch.finish_reason) run.finish = ch.finish_reason;
				}
			} else {
				const c = await `+create+`(req), ch = c.choices[0];
				run.text = ch.message ? ch.message.content : ch.text;
				run.finish = ch.finish_reason;
				run.tokens = c.usage.completion_tokens;
			}
		} catch (e) { run.error = {code: e.code, message: e.message, details: e.details || null}; }
		return run;
	})()`, &r)
	return &r
}

// checkCalls checks that the processors saw the output grow by one token
// per step, ending one short of the native tokens (the last token is not
// processed again), and a first row equal to the native one.
func checkCalls(t *testing.T, what string, r *procRun, native []int32, row0 []float32) {
	t.Helper()
	if len(r.Calls) != len(native) {
		t.Errorf("%s: %d calls for %d tokens", what, len(r.Calls), len(native))
		return
	}
	for i, ids := range r.Calls {
		if !slices.Equal(ids, native[:i]) {
			t.Errorf("%s: call %d got outputIds %v, want %v", what, i, ids, native[:i])
			return
		}
	}
	if !slices.Equal(r.Row0, row0) {
		t.Errorf("%s: the first row differs from the native one (%d vs %d values)", what, len(r.Row0), len(row0))
	}
}

// mostFrequent returns the token that occurs most often in ids (the lowest
// id on ties).
func mostFrequent(ids []int32) int32 {
	count := map[int32]int{}
	best := int32(-1)
	for _, id := range ids {
		count[id]++
		if best < 0 || count[id] > count[best] || count[id] == count[best] && id < best {
			best = id
		}
	}
	return best
}

func TestLogitsProcessors(t *testing.T) {
	t.Parallel()
	models := browsertest.RepoFile("models")
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	info := mustLoad(t, b, map[string]any{"model": "/models/stories260K/", "backend": "cpu"})
	e, err := engine.Load(filepath.Join(models, "stories260K"), cpu.New(1), engine.LoadOptions{Options: engine.Options{Context: info.Context}})
	if err != nil {
		t.Fatal(err)
	}
	vocab := e.Model.Config.Vocab
	const n = 24
	sampled := map[string]any{"prompt": "Once upon a time", "max_tokens": n, "temperature": 0.9, "seed": 11}
	var row0 []float32
	first := goProcessor(func(row []float32, out []int32) error {
		if len(out) == 0 {
			row0 = slices.Clone(row)
		}
		return nil
	})
	plain := nativeRun(t, e, false, sampled, first)
	banned := mostFrequent(plain.Tokens)
	t.Logf("unconstrained: %q; banning token %d (%q)", plain.Text, banned, e.Tok.Decode([]int32{banned}))

	t.Run("ban", func(t *testing.T) {
		want := nativeRun(t, e, false, sampled, goProcessor(func(row []float32, out []int32) error {
			row[banned] = float32(math.Inf(-1))
			return nil
		}))
		if slices.Contains(want.Tokens, banned) || want.Text == plain.Text {
			t.Fatalf("native ban: %q %v", want.Text, want.Tokens)
		}
		got := runProcs(t, b, false, sampled, fmt.Sprintf(`[(l, ids) => { record(l, ids); l[%d] = -Infinity; }]`, banned))
		if got.Error != nil || got.Text != want.Text || got.Finish != "length" || got.Tokens != n {
			t.Errorf("page: %q %s %d %v\nnative: %q", got.Text, got.Finish, got.Tokens, got.Error, want.Text)
		}
		checkCalls(t, "ban", got, want.Tokens, row0)
		for _, ids := range got.Calls {
			if slices.Contains(ids, banned) {
				t.Fatalf("banned token %d generated: %v", banned, ids)
			}
		}
	})

	t.Run("ban greedy as allowed_token_ids", func(t *testing.T) {
		// Greedy, -Infinity on one token is exactly allowed_token_ids of
		// every other token, which cmd/generate takes as a flag.
		greedy := map[string]any{"prompt": "Once upon a time", "max_tokens": n, "temperature": 0}
		top := mostFrequent(nativeRun(t, e, false, greedy).Tokens)
		var rest []string
		for id := range vocab {
			if id != int(top) {
				rest = append(rest, fmt.Sprint(id))
			}
		}
		want := generateCLI(t, "-model", "models/stories260K", "-prompt", "Once upon a time", "-n", fmt.Sprint(n),
			"-temperature", "0", "-allowed-token-ids", strings.Join(rest, ","))
		got := runProcs(t, b, false, greedy, fmt.Sprintf(`[(l) => { l[%d] = -Infinity; }]`, top))
		if got.Error != nil || got.Text != want {
			t.Errorf("page: %q %v\ngenerate -allowed-token-ids: %q", got.Text, got.Error, want)
		}
	})

	t.Run("boost, in order, async and returned", func(t *testing.T) {
		// A token the model ranks fifth at the first step and never picks.
		order := make([]int32, vocab)
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortStableFunc(order, func(a, b int32) int { return -cmpF32(row0[a], row0[b]) })
		boost := int32(-1)
		for _, id := range order[4:] {
			if !slices.Contains(plain.Tokens, id) {
				boost = id
				break
			}
		}
		// (l + 4) * 2 differs from l * 2 + 4: the order shows.
		want := nativeRun(t, e, false, sampled, goProcessor(func(row []float32, out []int32) error {
			row[boost] += 4
			return nil
		}), goProcessor(func(row []float32, out []int32) error {
			row[boost] *= 2
			return nil
		}))
		if !slices.Contains(want.Tokens, boost) {
			t.Fatalf("native boost of %d: %v", boost, want.Tokens)
		}
		got := runProcs(t, b, false, map[string]any{"prompt": "Once upon a time", "max_tokens": n, "temperature": 0.9, "seed": 11, "stream": true},
			fmt.Sprintf(`[(l, ids) => { record(l, ids); l[%[1]d] += 4; },
				async (l) => { await null; const c = Float32Array.from(l); c[%[1]d] *= 2; return c; }]`, boost))
		if got.Error != nil || got.Text != want.Text || got.Tokens != n {
			t.Errorf("page: %q %d %v\nnative: %q", got.Text, got.Tokens, got.Error, want.Text)
		}
		checkCalls(t, "boost", got, want.Tokens, row0)
		t.Logf("boosting %d: %q", boost, got.Text)
	})

	// The greedy text of the first k tokens.
	greedyText := func(k int) string {
		return nativeRun(t, e, false, map[string]any{"prompt": "Once upon a time", "max_tokens": k, "temperature": 0}).Text
	}

	t.Run("errors", func(t *testing.T) {
		short := map[string]any{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0, "stream": true}
		got := runProcs(t, b, false, short, `[() => {}, (l, ids) => { if (ids.length === 3) throw new Error("boom at 3"); }]`)
		if e := got.Error; e == nil || e.Code != "bad_request" || e.Details["reason"] != "processor_error" || e.Details["index"] != 1.0 ||
			e.Details["param"] != "logits_processors" || !strings.Contains(e.Message, "logits_processors[1] threw: boom at 3") {
			t.Errorf("throwing processor: %+v", got)
		} else {
			t.Logf("thrown: %s %v", e.Message, e.Details)
		}
		if want := greedyText(3); got.Text != want { // the three tokens before the throw
			t.Errorf("streamed before the throw: %q, want %q", got.Text, want)
		}
		got = runProcs(t, b, false, short, `[async (l, ids) => { if (ids.length === 2) l[7] = NaN; }]`)
		if e := got.Error; e == nil || e.Code != "bad_request" || e.Details["reason"] != "invalid_logit" || e.Details["token"] != 7.0 ||
			e.Details["index"] != 0.0 || !strings.Contains(e.Message, "sampler: logit 7 is NaN (written by logits_processors[0])") {
			t.Errorf("NaN: %+v", got)
		} else {
			t.Logf("NaN: %s", e.Message)
		}
		got = runProcs(t, b, false, short, `[() => {}, () => {}, (l) => [1, 2, 3]]`)
		if e := got.Error; e == nil || e.Code != "bad_request" || e.Details["index"] != 2.0 || !strings.Contains(e.Message, "returned 3 values") {
			t.Errorf("short array: %+v", got)
		}
		got = runProcs(t, b, false, short, `[(l) => l.fill(-Infinity)]`)
		if e := got.Error; e == nil || e.Code != "bad_request" || !strings.Contains(e.Message, "every token is masked") {
			t.Errorf("all masked: %+v", got)
		}
		got = runProcs(t, b, false, short, `["not a function"]`)
		if e := got.Error; e == nil || e.Code != "bad_request" || e.Details["param"] != "logits_processors" {
			t.Errorf("not a function: %+v", got)
		}
		// The engine is fine afterwards, and an empty list is no processor.
		got = runProcs(t, b, false, short, `[]`)
		if got.Error != nil || got.Text != greedyText(8) {
			t.Errorf("after the errors: %+v", got)
		}
	})

	t.Run("abort", func(t *testing.T) {
		// A processor that never settles: abort() from inside it ends the
		// request with the tokens before it.
		got := runProcs(t, b, false, map[string]any{"prompt": "Once upon a time", "max_tokens": 100, "temperature": 0, "stream": true},
			`[(l, ids) => ids.length === 4 ? (engine.abort(), new Promise(() => {})) : undefined]`)
		if got.Error != nil || got.Finish != "abort" || got.Tokens != 4 || got.Text != greedyText(4) {
			t.Errorf("abort while a processor hangs: %+v", got)
		}
		// A processor-slowed stream stops within one token of abort(), as
		// TestAbort counts it.
		res := abortStream(t, b, "logits_processors: [() => new Promise((r) => setTimeout(r, 20))]")
		if res.Finish != "abort" || res.After > 1 || !res.Pinged || res.Usage["completion_tokens"] != float64(res.Before+res.After) {
			t.Errorf("abort of a slowed stream: %+v", res)
		}
		t.Logf("slowed stream: %d tokens before the worker saw the abort, %d after", res.Before, res.After)
		got = runProcs(t, b, false, map[string]any{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}, `[(l, ids) => record(l, ids)]`)
		if got.Error != nil || got.Text != greedyText(8) || len(got.Calls) != 8 {
			t.Errorf("after abort: %+v", got)
		}
	})

	t.Run("cost", func(t *testing.T) {
		// Decode speed with a no-op processor against none (logged, not
		// asserted): one round trip and the row both ways per token.
		speed := func(procs string) float64 {
			var s struct {
				PerS float64 `json:"decode_tokens_per_s"`
			}
			b.MustRun(`engine.completions.create({prompt: "Once upon a time", max_tokens: 64, temperature: 0, ignore_eos: true, logits_processors: `+procs+`}).then(() => engine.stats)`, &s)
			return s.PerS
		}
		speed("[]")
		t.Logf("vocab %d: decode %.1f tok/s without processors, %.1f with a no-op one", vocab, speed("[]"), speed("[() => {}]"))
	})
}

func cmpF32(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestLogitsProcessorsChat: chat.completions takes logits_processors too;
// a ban gives what the Go engine gives with the same ban.
func TestLogitsProcessorsChat(t *testing.T) {
	t.Parallel()
	models := t.TempDir()
	dir := filepath.Join(models, "qwen")
	browsertest.Convert(t, browsertest.RepoFile("testdata/models/tiny-qwen3-q8_0.gguf"), dir,
		browsertest.ConvertOptions{Tokenizer: browsertest.ChatTokenizer(t, "tiny-qwen3")})
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	info := mustLoad(t, b, map[string]any{"model": "/models/qwen/", "backend": "cpu", "contextLength": 512})
	e, err := engine.Load(dir, cpu.New(1), engine.LoadOptions{Options: engine.Options{Context: info.Context}})
	if err != nil {
		t.Fatal(err)
	}
	req := map[string]any{"messages": []map[string]any{{"role": "user", "content": "Hello there"}}, "max_tokens": 12,
		"temperature": 0.7, "seed": 3, "chat_template_kwargs": map[string]any{"enable_thinking": false}}
	plain := nativeRun(t, e, true, req)
	banned := mostFrequent(plain.Tokens)
	want := nativeRun(t, e, true, req, goProcessor(func(row []float32, _ []int32) error {
		row[banned] = float32(math.Inf(-1))
		return nil
	}))
	if slices.Contains(want.Tokens, banned) || slices.Equal(want.Tokens, plain.Tokens) {
		t.Fatalf("native ban of %d: %v (unconstrained %v)", banned, want.Tokens, plain.Tokens)
	}
	got := runProcs(t, b, true, req, fmt.Sprintf(`[(l, ids) => { record(l, ids); l[%d] = -Infinity; }]`, banned))
	if got.Error != nil || got.Text != want.Text || got.Tokens != len(want.Tokens) {
		t.Errorf("page: %q %d %v\nnative: %q %d", got.Text, got.Tokens, got.Error, want.Text, len(want.Tokens))
	}
	if len(got.Calls) != len(want.Tokens) || len(got.Calls) > 0 && !slices.Equal(got.Calls[len(got.Calls)-1], want.Tokens[:len(want.Tokens)-1]) {
		t.Errorf("calls %v, native tokens %v", got.Calls, want.Tokens)
	}
	t.Logf("banned %d: %q (unconstrained %q)", banned, want.Text, plain.Text)
}
