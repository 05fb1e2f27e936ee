package api

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/golden"
)

func runner(e *engine.Engine) *Runner {
	return &Runner{Engine: e, Model: "test", Now: func() time.Time { return time.Unix(1700000000, 0) },
		NewID: func(p string) string { return p + "1" }}
}

// collect runs a request and returns the chunks (stream) or the response.
func collect(t *testing.T, rn *Runner, ctx context.Context, body string, chat bool) ([]map[string]any, map[string]any, error) {
	t.Helper()
	var r *Request
	var err error
	if chat {
		r, err = ParseChat([]byte(body))
	} else {
		r, err = ParseCompletion([]byte(body))
	}
	if err != nil {
		t.Fatal(err)
	}
	var chunks []map[string]any
	out, err := rn.Run(ctx, r, func(c any) error {
		chunks = append(chunks, roundTrip(t, c))
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if out == nil {
		return chunks, nil, nil
	}
	return chunks, roundTrip(t, out), nil
}

func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func goldenStory(t *testing.T) []int32 {
	return golden.Read(t, browsertest.RepoFile("testdata/golden/stories260K.story.golden")).Greedy
}

func choice(m map[string]any) map[string]any { return m["choices"].([]any)[0].(map[string]any) }

// TestCompletionGolden: the converted stories260K, loaded the way the
// browser loads it, tells llama.cpp's greedy story.
func TestCompletionGolden(t *testing.T) {
	e, _ := loadDir(t, converted(t, "stories260K.gguf"), 0)
	rn := runner(e)
	_, res, err := collect(t, rn, context.Background(), `{"prompt":"Once upon a time","max_tokens":64,"temperature":0}`, false)
	if err != nil {
		t.Fatal(err)
	}
	want := e.Tok.Decode(goldenStory(t))
	c := choice(res)
	if c["text"] != want {
		t.Errorf("text %q\nwant %q", c["text"], want)
	}
	if res["object"] != ObjectTextCompletion || res["id"] != "cmpl-1" || res["model"] != "test" || res["created"] != 1700000000.0 {
		t.Errorf("envelope %v", res)
	}
	if c["finish_reason"] != "length" || c["logprobs"] != nil {
		t.Errorf("finish %v logprobs %v", c["finish_reason"], c["logprobs"])
	}
	u := res["usage"].(map[string]any)
	if u["prompt_tokens"] != 5.0 || u["completion_tokens"] != 64.0 || u["total_tokens"] != 69.0 ||
		u["prompt_tokens_details"].(map[string]any)["cached_tokens"] != 0.0 {
		t.Errorf("usage %v", u)
	}
	tm := res["timings"].(map[string]any)
	if tm["prefill_tokens"] != 5.0 || tm["decode_tokens"] != 64.0 || tm["decode_tokens_per_s"].(float64) <= 0 {
		t.Errorf("timings %v", tm)
	}
}

// TestStreamMatchesResponse: the deltas of a sampled stream concatenate to
// the text of the same request without streaming, and to what the engine
// gives on the original GGUF.
func TestStreamMatchesResponse(t *testing.T) {
	dir := converted(t, "stories260K.gguf")
	body := `{"prompt":"Lily","max_tokens":40,"temperature":0.8,"top_k":40,"top_p":0.95,"seed":7,"stream":%s}`
	e1, _ := loadDir(t, dir, 0)
	chunks, _, err := collect(t, runner(e1), context.Background(), strings.Replace(body, "%s", "true", 1), false)
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := loadDir(t, dir, 0)
	_, res, err := collect(t, runner(e2), context.Background(), strings.Replace(body, "%s", "false", 1), false)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i, c := range chunks {
		ch := choice(c)
		text.WriteString(ch["text"].(string))
		last := i == len(chunks)-1
		// No stream_options.include_usage: no usage anywhere (OpenAI).
		if (ch["finish_reason"] != nil) != last || c["usage"] != nil {
			t.Errorf("chunk %d: finish %v usage %v", i, ch["finish_reason"], c["usage"])
		}
	}
	if got := choice(res)["text"]; text.String() != got {
		t.Errorf("stream %q, response %q", text.String(), got)
	}
	ref, err := engine.Load(browsertest.RepoFile("testdata/models/stories260K.gguf"), cpu.New(1), engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ParseCompletion([]byte(strings.Replace(body, "%s", "false", 1)))
	want, err := ref.Generate(context.Background(), &r.Engine, func(engine.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != want.Text {
		t.Errorf("converted model %q, GGUF %q", text.String(), want.Text)
	}
}

// TestChatTurns: a second turn reuses the KV cache of the first, says so in
// usage, and answers as a fresh engine does.
func TestChatTurns(t *testing.T) {
	dir := converted(t, "tiny-qwen3-q8_0.gguf")
	e, _ := loadDir(t, dir, 256)
	rn := runner(e)
	_, first, err := collect(t, rn, context.Background(),
		`{"messages":[{"role":"user","content":"Hello there"}],"max_tokens":6,"temperature":0,"chat_template_kwargs":{"enable_thinking":false}}`, true)
	if err != nil {
		t.Fatal(err)
	}
	msg := choice(first)["message"].(map[string]any)
	if msg["role"] != "assistant" || first["object"] != ObjectChatCompletion || first["id"] != "chatcmpl-1" {
		t.Fatalf("first %v", first)
	}
	reply, _ := json.Marshal(msg["content"])
	second := `{"messages":[{"role":"user","content":"Hello there"},{"role":"assistant","content":` + string(reply) +
		`},{"role":"user","content":"And again"}],"max_tokens":6,"temperature":0,"chat_template_kwargs":{"enable_thinking":false}}`
	_, res, err := collect(t, rn, context.Background(), second, true)
	if err != nil {
		t.Fatal(err)
	}
	// The cache holds the whole first prompt, so at least the prefix the
	// two rendered prompts share is reused (Qwen3's template drops the
	// empty think block from history, so that is where they part).
	p1, _ := ParseChat([]byte(`{"messages":[{"role":"user","content":"Hello there"}],"chat_template_kwargs":{"enable_thinking":false}}`))
	p2, _ := ParseChat([]byte(second))
	ids1, err := e.PromptIDs(&p1.Engine)
	if err != nil {
		t.Fatal(err)
	}
	ids2, err := e.PromptIDs(&p2.Engine)
	if err != nil {
		t.Fatal(err)
	}
	common := 0
	for common < len(ids1) && common < len(ids2) && ids1[common] == ids2[common] {
		common++
	}
	u := res["usage"].(map[string]any)
	cached := u["prompt_tokens_details"].(map[string]any)["cached_tokens"].(float64)
	if common < 10 || cached < float64(common) || cached >= u["prompt_tokens"].(float64) || u["prompt_tokens"].(float64) != float64(len(ids2)) {
		t.Errorf("second turn: cached %v of %v prompt tokens; the prompts share %d", cached, u["prompt_tokens"], common)
	}
	if tm := res["timings"].(map[string]any); tm["prefill_tokens"].(float64) != u["prompt_tokens"].(float64)-cached {
		t.Errorf("prefill tokens %v, usage %v", tm["prefill_tokens"], u)
	}
	fresh, _ := loadDir(t, dir, 256)
	_, want, err := collect(t, runner(fresh), context.Background(), second, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, w := choice(res)["message"], choice(want)["message"]; !equalJSON(got, w) {
		t.Errorf("with reuse %v, fresh %v", got, w)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestChatLogprobs(t *testing.T) {
	e, _ := loadDir(t, converted(t, "tiny-qwen3-q8_0.gguf"), 256)
	chunks, _, err := collect(t, runner(e), context.Background(),
		`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"temperature":0.7,"seed":1,"logprobs":true,"top_logprobs":3,"stream":true}`, true)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range chunks {
		lp, ok := choice(c)["logprobs"].(map[string]any)
		if !ok {
			continue
		}
		for _, x := range lp["content"].([]any) {
			e := x.(map[string]any)
			top := e["top_logprobs"].([]any)
			if e["logprob"].(float64) > 0 || len(top) != 3 {
				t.Errorf("entry %v", e)
			}
			for i := 1; i < len(top); i++ {
				if top[i].(map[string]any)["logprob"].(float64) > top[i-1].(map[string]any)["logprob"].(float64) {
					t.Errorf("top logprobs not sorted: %v", top)
				}
			}
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d logprob entries, want 4", n)
	}
}

func TestRunErrors(t *testing.T) {
	e, _ := loadDir(t, converted(t, "stories260K.gguf"), 32)
	rn := runner(e)
	code := func(err error) string {
		var ae *Error
		if errors.As(err, &ae) {
			return ae.Code
		}
		return "not an *Error: " + err.Error()
	}
	_, _, err := collect(t, rn, context.Background(), `{"messages":[{"role":"user","content":"Hi"}]}`, true)
	if code(err) != CodeNoChatTemplate {
		t.Errorf("chat without template: %v", err)
	}
	_, _, err = collect(t, rn, context.Background(), `{"prompt":"`+strings.Repeat("Once upon a time ", 20)+`","max_tokens":4}`, false)
	if code(err) != CodeContextOverflow {
		t.Errorf("long prompt: %v", err)
	}
	_, _, err = collect(t, rn, context.Background(), `{"prompt":"Hi","top_p":2}`, false)
	if code(err) != CodeBadRequest {
		t.Errorf("top_p 2: %v", err)
	}
	_, res, err := collect(t, rn, context.Background(), `{"prompt":"`+strings.Repeat("Once upon a time ", 20)+`","max_tokens":4,"temperature":0,"context_overflow":"truncate"}`, false)
	if err != nil || choice(res)["finish_reason"] != "length" {
		t.Errorf("truncate: %v %v", err, res)
	}
	if _, err := (&Runner{}).Run(context.Background(), &Request{}, nil); code(err) != CodeNotLoaded {
		t.Errorf("no engine: %v", err)
	}
}

// TestAbort: cancelling mid-stream ends the request within one token, with
// finish_reason "abort" and what was generated so far.
func TestAbort(t *testing.T) {
	e, _ := loadDir(t, converted(t, "stories260K.gguf"), 0)
	ctx, cancel := context.WithCancel(context.Background())
	r, _ := ParseCompletion([]byte(`{"prompt":"Once upon a time","max_tokens":60,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`))
	var texts []string
	var last, usage map[string]any
	_, err := runner(e).Run(ctx, r, func(c any) error {
		m := roundTrip(t, c)
		if len(m["choices"].([]any)) == 0 {
			usage = m
			return nil
		}
		last = m
		if ch := choice(m); ch["finish_reason"] == nil {
			texts = append(texts, ch["text"].(string))
			if len(texts) == 3 {
				cancel()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if choice(last)["finish_reason"] != FinishAbort {
		t.Errorf("final chunk %v", last)
	}
	if u, _ := usage["usage"].(map[string]any); u["completion_tokens"] != 3.0 {
		t.Errorf("usage after abort %v", usage)
	}
	want := e.Tok.Decode(goldenStory(t)[:3])
	if got := strings.Join(texts, ""); !slices.Contains([]string{want}, got) {
		t.Errorf("text before abort %q, want %q", got, want)
	}
}
