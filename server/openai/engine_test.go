package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"wasmllm/api"
	"wasmllm/internal/testkit/browsertest"
	"wasmllm/sampler"
)

func TestModelsEndpoint(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, false)
	get := func(path string) *http.Response {
		resp, err := http.Get(te.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var list ModelList
	decode(t, get("/v1/models"), http.StatusOK, &list)
	if list.Object != "list" || len(list.Data) != 1 {
		t.Fatalf("/v1/models: %+v", list)
	}
	if c := list.Data[0]; c.ID != textModel || c.Object != "model" || c.OwnedBy != "wasmllm" || c.Root != textModel || c.MaxModelLen != 0 {
		t.Errorf("card before loading: %+v", c)
	}
	if n := te.loads.get(); n != 0 {
		t.Errorf("listing loaded %d models; models load on their first request", n)
	}
	var out api.TextCompletion
	decode(t, te.post(t, "/v1/completions", map[string]any{"model": textModel, "prompt": "Once", "max_tokens": 2}), http.StatusOK, &out)
	decode(t, te.post(t, "/v1/completions", map[string]any{"model": textModel, "prompt": "Once", "max_tokens": 2}), http.StatusOK, &out)
	if n := te.loads.get(); n != 1 {
		t.Errorf("%d loads for two requests, want 1 (models stay loaded)", n)
	}
	var card ModelCard
	decode(t, get("/v1/models/"+textModel), http.StatusOK, &card)
	if card.ID != textModel || card.MaxModelLen != 2048 {
		t.Errorf("card once loaded: %+v, want max_model_len 2048", card)
	}
	var eb ErrorBody
	decode(t, get("/v1/models/nope"), http.StatusNotFound, &eb)
	if eb.Error.Type != "NotFoundError" || eb.Error.Code != 404 || eb.Error.Param == nil || *eb.Error.Param != "model" {
		t.Errorf("unknown model: %+v", eb.Error)
	}
	decode(t, get("/v1/audio/speech"), http.StatusNotFound, &eb)
	resp := te.post(t, "/v1/models", map[string]any{})
	if resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /v1/models: Allow %q", resp.Header.Get("Allow"))
	}
	decode(t, resp, http.StatusMethodNotAllowed, &eb)
}

func TestCompletions(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, false)
	req := map[string]any{"model": textModel, "prompt": "Once upon a time", "max_tokens": 12, "temperature": 0}
	var whole api.TextCompletion
	decode(t, te.post(t, "/v1/completions", req), http.StatusOK, &whole)
	if whole.Object != api.ObjectTextCompletion || whole.Model != textModel || len(whole.Choices) != 1 || whole.Usage == nil {
		t.Fatalf("response: %+v", whole)
	}
	if c := whole.Choices[0]; c.Text == "" || c.FinishReason == nil || *c.FinishReason != "length" {
		t.Errorf("choice: %+v", c)
	}
	if u := whole.Usage; u.PromptTokens != 5 || u.CompletionTokens != 12 || u.TotalTokens != 17 {
		t.Errorf("usage %+v, want 5 + 12 tokens", u)
	}

	for _, includeUsage := range []bool{false, true} {
		req["stream"] = true
		req["stream_options"] = map[string]any{"include_usage": includeUsage}
		evs := events(t, te.post(t, "/v1/completions", req))
		var text strings.Builder
		var finish []string
		var usage *api.Usage
		ids := map[string]bool{}
		for i, ev := range evs {
			var c api.TextCompletion
			if err := json.Unmarshal([]byte(ev), &c); err != nil {
				t.Fatal(err)
			}
			ids[c.ID] = true
			if c.Object != api.ObjectTextCompletion {
				t.Errorf("chunk %d: object %q", i, c.Object)
			}
			if c.Usage != nil {
				if i != len(evs)-1 || len(c.Choices) != 0 {
					t.Errorf("chunk %d of %d has usage %s; only the last, with no choices, may", i, len(evs), ev)
				}
				usage = c.Usage
			}
			for _, ch := range c.Choices {
				text.WriteString(ch.Text)
				if ch.FinishReason != nil {
					finish = append(finish, *ch.FinishReason)
				}
			}
		}
		if text.String() != whole.Choices[0].Text {
			t.Errorf("include_usage %v: streamed %q, whole %q", includeUsage, text.String(), whole.Choices[0].Text)
		}
		if len(ids) != 1 || len(finish) != 1 || finish[0] != "length" {
			t.Errorf("include_usage %v: ids %v, finish reasons %v", includeUsage, ids, finish)
		}
		switch {
		case includeUsage && (usage == nil || usage.CompletionTokens != 12 || usage.PromptTokens != 5):
			t.Errorf("include_usage: usage %+v", usage)
		case !includeUsage && usage != nil:
			t.Errorf("usage %+v sent without include_usage", usage)
		}
	}

	// A prompt of token ids.
	decode(t, te.post(t, "/v1/completions", map[string]any{"model": textModel, "prompt": []int{1, 403, 407}, "max_tokens": 3}), http.StatusOK, &whole)
	if whole.Usage.PromptTokens != 3 || whole.Usage.CompletionTokens != 3 {
		t.Errorf("token-id prompt: usage %+v", whole.Usage)
	}
	if !strings.Contains(te.log.String(), "api: completion stories260K: 5 prompt tokens") {
		t.Errorf("no request line in the log:\n%s", te.log.String())
	}
}

func TestChatCompletions(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, true)
	req := map[string]any{"model": chatModel, "messages": []map[string]any{{"role": "user", "content": "Hello"}}, "max_tokens": 8, "temperature": 0}
	var whole api.ChatCompletion
	decode(t, te.post(t, "/v1/chat/completions", req), http.StatusOK, &whole)
	if whole.Object != api.ObjectChatCompletion || len(whole.Choices) != 1 || whole.Usage == nil || whole.Usage.CompletionTokens == 0 {
		t.Fatalf("response: %+v", whole)
	}
	msg := whole.Choices[0].Message
	if msg == nil || msg.Role != "assistant" || msg.Content == nil {
		t.Fatalf("message: %+v", msg)
	}
	req["stream"] = true
	req["stream_options"] = map[string]any{"include_usage": true}
	evs := events(t, te.post(t, "/v1/chat/completions", req))
	var text strings.Builder
	var usage *api.Usage
	for i, ev := range evs {
		var c api.ChatCompletion
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		if c.Object != api.ObjectChatCompletionChunk {
			t.Errorf("chunk %d: object %q", i, c.Object)
		}
		if i == 0 && (len(c.Choices) != 1 || c.Choices[0].Delta == nil || c.Choices[0].Delta.Role != "assistant") {
			t.Errorf("first chunk %s: want the assistant role", ev)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta != nil && ch.Delta.Content != nil {
				text.WriteString(*ch.Delta.Content)
			}
		}
	}
	if text.String() != *msg.Content {
		t.Errorf("streamed %q, whole %q", text.String(), *msg.Content)
	}
	if usage == nil || usage.CompletionTokens != whole.Usage.CompletionTokens || usage.PromptTokens != whole.Usage.PromptTokens {
		t.Errorf("stream usage %+v, whole %+v", usage, whole.Usage)
	}
}

func TestErrors(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1, Context: 64, MaxBody: 4096}, false)
	long := make([]int, 80)
	for i := range long {
		long[i] = 300
	}
	user := []map[string]any{{"role": "user", "content": "hi"}}
	for _, c := range []struct {
		name, path, ctype, body string
		status                  int
		param                   string
	}{
		{"unknown model", "/v1/completions", "", `{"model": "nope", "prompt": "x"}`, 404, "model"},
		{"model not a string", "/v1/completions", "", `{"model": 7, "prompt": "x"}`, 400, "model"},
		{"bad JSON", "/v1/completions", "", `{"model": `, 400, ""},
		{"not JSON", "/v1/completions", "text/plain", `{"model": "stories260K", "prompt": "x"}`, 415, ""},
		{"too large", "/v1/completions", "", `{"model": "stories260K", "prompt": "` + strings.Repeat("x", 5000) + `"}`, 413, ""},
		{"bad temperature", "/v1/completions", "", `{"model": "stories260K", "prompt": "x", "temperature": 5}`, 400, "temperature"},
		{"unknown parameter", "/v1/completions", "", `{"model": "stories260K", "prompt": "x", "temprature": 1}`, 400, ""},
		{"no prompt", "/v1/completions", "", `{"model": "stories260K"}`, 400, "prompt"},
		{"prompt past the context", "/v1/completions", "", mustJSON(map[string]any{"model": textModel, "prompt": long}), 400, "input_tokens"},
		{"max_tokens past the context", "/v1/completions", "", `{"model": "stories260K", "prompt": "Once", "max_tokens": 100}`, 400, "max_tokens"},
		{"max_tokens at MaxInt64", "/v1/completions", "", `{"model": "stories260K", "prompt": "Once", "max_tokens": 9223372036854775807}`, 400, "max_tokens"},
		{"token outside the vocabulary", "/v1/completions", "", `{"model": "stories260K", "prompt": [1, 9999]}`, 400, "prompt"},
		{"chat without a template", "/v1/chat/completions", "", mustJSON(map[string]any{"model": textModel, "messages": user}), 400, ""},
		{"stream, chat without a template", "/v1/chat/completions", "", mustJSON(map[string]any{"model": textModel, "messages": user, "stream": true}), 400, ""},
		{"stream, bad logit_bias", "/v1/completions", "", `{"model": "stories260K", "prompt": "x", "stream": true, "logit_bias": {"9999": 1}}`, 400, "logit_bias"},
		{"no such endpoint", "/v1/engines", "", `{}`, 404, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ct := c.ctype
			if ct == "" {
				ct = "application/json"
			}
			resp, err := http.Post(te.srv.URL+c.path, ct, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			var eb ErrorBody
			decode(t, resp, c.status, &eb)
			e := eb.Error
			if e.Code != c.status || e.Type != errorType(c.status) || e.Message == "" {
				t.Errorf("error %+v, want code %d, type %s", e, c.status, errorType(c.status))
			}
			if got := ""; e.Param != nil || c.param != "" {
				if e.Param != nil {
					got = *e.Param
				}
				if got != c.param {
					t.Errorf("param %q, want %q (%s)", got, c.param, e.Message)
				}
			}
			if c.param == "input_tokens" && !strings.Contains(e.Message, "maximum context length is 64 tokens") {
				t.Errorf("message %q is not vLLM's", e.Message)
			}
		})
	}
	resp, err := http.Get(te.srv.URL + "/v1/completions")
	if err != nil {
		t.Fatal(err)
	}
	var eb ErrorBody
	decode(t, resp, http.StatusMethodNotAllowed, &eb)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestModelField: a request without a model gets the only one, if there
// is only one; a model folder that fails to load is a 500 that names the
// model, not the server's folders, and is tried again next time.
// TestBadWords: bad_words is tokenized before the parameters are checked,
// so a request with it runs (it used to be refused as "not tokenized"), and
// a word of the greedy reply, banned, is no longer in it.
func TestBadWords(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, false)
	req := map[string]any{"model": textModel, "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}
	var plain, banned api.TextCompletion
	decode(t, te.post(t, "/v1/completions", req), http.StatusOK, &plain)
	var word string
	for _, f := range strings.Fields(plain.Choices[0].Text) {
		if f = strings.Trim(f, ",."); len(f) > 2 {
			word = f
			break
		}
	}
	if word == "" {
		t.Fatalf("no word in the reply %q", plain.Choices[0].Text)
	}
	req["bad_words"] = []string{word}
	decode(t, te.post(t, "/v1/completions", req), http.StatusOK, &banned)
	if got := banned.Choices[0].Text; slices.Contains(strings.Fields(got), word) || got == plain.Choices[0].Text {
		t.Errorf("bad_words [%q]: reply %q (without: %q)", word, got, plain.Choices[0].Text)
	}
}

func TestModelField(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, false)
	var out api.TextCompletion
	decode(t, te.post(t, "/v1/completions", map[string]any{"prompt": "Once", "max_tokens": 2}), http.StatusOK, &out)
	if out.Model != textModel {
		t.Errorf("model %q", out.Model)
	}

	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "manifest.json"), []byte(`{"format_version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	te2 := newTestEngine(t, EngineConfig{Queue: 1, Models: dirModels{textModel: browsertest.RepoFile("models/stories260K"), "broken": broken}}, false)
	var eb ErrorBody
	decode(t, te2.post(t, "/v1/completions", map[string]any{"prompt": "Once"}), http.StatusBadRequest, &eb)
	if eb.Error.Param == nil || *eb.Error.Param != "model" {
		t.Errorf("no model among two: %+v", eb.Error)
	}
	for range 2 {
		decode(t, te2.post(t, "/v1/completions", map[string]any{"model": "broken", "prompt": "Once"}), http.StatusInternalServerError, &eb)
		if eb.Error.Type != "InternalServerError" || !strings.Contains(eb.Error.Message, "`broken` failed to load") || strings.Contains(eb.Error.Message, broken) {
			t.Errorf("broken model: %+v", eb.Error)
		}
	}
	if n := te2.loads.get(); n != 2 {
		t.Errorf("%d loads of a broken model for two requests, want 2", n)
	}
}

// startSlow starts a streamed request that takes slowDelay per token for
// up to n tokens and returns once its first chunk is in; cancel ends it.
func startSlow(t *testing.T, te *testEngine, n int) (cancel func(), done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := mustJSON(map[string]any{"model": textModel, "prompt": "Once", "max_tokens": n, "ignore_eos": true, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, te.srv.URL+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	buf := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ch <- err
	}()
	return cancel, ch
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (te *testEngine) waiting(name string) int {
	te.mu.Lock()
	defer te.mu.Unlock()
	if s := te.slots[name]; s != nil {
		return s.waiting
	}
	return 0
}

// TestQueueAndAbort: a model answers one request at a time; Queue more
// wait, the next gets 429; a client that disconnects stops its generation
// at once, and the next request in the queue runs.
func TestQueueAndAbort(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, false)
	cancel, done := startSlow(t, te, 1000)
	defer cancel()

	second := make(chan *http.Response, 1)
	go func() {
		resp, err := http.Post(te.srv.URL+"/v1/completions", "application/json",
			strings.NewReader(`{"model": "stories260K", "prompt": "Once", "max_tokens": 3}`))
		if err != nil {
			t.Error(err)
			resp = nil
		}
		second <- resp
	}()
	waitFor(t, "the second request to queue", func() bool { return te.waiting(textModel) == 1 })

	resp := te.post(t, "/v1/completions", map[string]any{"model": textModel, "prompt": "Once", "max_tokens": 3})
	if resp.Header.Get("Retry-After") != "1" {
		t.Errorf("429 without Retry-After: %v", resp.Header)
	}
	var eb ErrorBody
	decode(t, resp, http.StatusTooManyRequests, &eb)
	if eb.Error.Type != "RateLimitError" || eb.Error.Code != 429 {
		t.Errorf("queue full: %+v", eb.Error)
	}
	select {
	case <-second:
		t.Fatal("the second request did not wait for the first")
	default:
	}

	cancel()
	<-done
	start := time.Now()
	var out api.TextCompletion
	select {
	case r := <-second:
		if r == nil {
			t.FailNow()
		}
		decode(t, r, http.StatusOK, &out)
	case <-time.After(5 * time.Second):
		t.Fatal("the second request still waits 5 s after the first client left")
	}
	stopped := te.slow.get()
	time.Sleep(100 * time.Millisecond)
	if n := te.slow.get(); n != stopped || n >= 1000 {
		t.Errorf("the aborted generation went on: %d tokens, then %d", stopped, n)
	}
	t.Logf("aborted after %d tokens; the next request ran %s later", stopped, time.Since(start).Round(time.Millisecond))
	waitFor(t, "the abort in the log", func() bool { return strings.Contains(te.log.String(), "abort") })
}

// TestAbortNotStreamed: a client that leaves a non-streamed request stops
// its generation too.
func TestAbortNotStreamed(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, te.srv.URL+"/v1/completions",
		strings.NewReader(`{"model": "stories260K", "prompt": "Once", "max_tokens": 1000, "ignore_eos": true}`))
	req.Header.Set("Content-Type", "application/json")
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the request finished before its client gave up")
	}
	waitFor(t, "the abort in the log", func() bool { return strings.Contains(te.log.String(), "finish abort") })
	if n := te.slow.get(); n >= 1000 {
		t.Errorf("%d tokens generated for a client that left", n)
	}
	var out api.TextCompletion
	decode(t, te.post(t, "/v1/completions", map[string]any{"model": textModel, "prompt": "Once", "max_tokens": 2}), http.StatusOK, &out)
}

// TestLongerThanReadTimeout: a generation may outlast the server's read
// timeout (which covers reading the request): it must not be taken for a
// client that left.
func TestLongerThanReadTimeout(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, false, func(s *http.Server) { s.ReadTimeout = 100 * time.Millisecond })
	n := slowFrom
	var out api.TextCompletion
	decode(t, te.post(t, "/v1/completions", map[string]any{"model": textModel, "prompt": "Once", "max_tokens": n, "ignore_eos": true}), http.StatusOK, &out)
	if out.Usage.CompletionTokens != n || *out.Choices[0].FinishReason != "length" {
		t.Errorf("%d tokens, finish %s; want %d, length", out.Usage.CompletionTokens, *out.Choices[0].FinishReason, n)
	}
	body := mustJSON(map[string]any{"model": textModel, "prompt": "Once", "max_tokens": n, "ignore_eos": true, "stream": true})
	resp, err := http.Post(te.srv.URL+"/v1/completions", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, resp)
	if !strings.Contains(evs[len(evs)-1], `"finish_reason":"length"`) {
		t.Errorf("stream ended with %s", evs[len(evs)-1])
	}
}

// failingProcessor fails from its third token on.
type failingProcessor struct{ calls *int64counter }

func (p failingProcessor) Process(logits []float32, output []int32) error {
	if p.calls.add(); p.calls.get() >= 3 {
		return errors.New("processor failed")
	}
	return nil
}

// TestStreamFailsMidway: an error after the stream has started ends it
// with an error event, as vLLM sends one, then [DONE]; before it has
// started, it is the HTTP status.
func TestStreamFailsMidway(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, false)
	te.Engine.params = func(p *sampler.Params) {
		p.Processors = append(p.Processors, failingProcessor{calls: &int64counter{}})
	}
	evs := events(t, te.post(t, "/v1/completions", map[string]any{"model": textModel, "prompt": "Once", "max_tokens": 10, "stream": true}))
	var eb ErrorBody
	if len(evs) < 2 || json.Unmarshal([]byte(evs[len(evs)-1]), &eb) != nil || eb.Error.Code != 500 || eb.Error.Type != "InternalServerError" {
		t.Fatalf("events %q: want text chunks, then a 500 error event", evs)
	}
	if !strings.Contains(eb.Error.Message, "processor failed") {
		t.Errorf("error event %+v", eb.Error)
	}
	if !strings.Contains(te.log.String(), "processor failed") {
		t.Errorf("a 500 not logged:\n%s", te.log.String())
	}
}
