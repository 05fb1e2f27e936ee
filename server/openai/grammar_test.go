package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wasmllm/internal/testkit"
)

// TestGrammarRepros (issue 39 #1 to #3): the requests that grew the server
// to 2 GB, held the model's turn, or compiled before the model lookup and
// the queue are answered at once: a 400 naming the field, with a short
// message.
func TestGrammarRepros(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, false)
	for _, c := range []struct {
		name  string
		body  map[string]any
		param string
	}{
		{"nested GBNF", map[string]any{"guided_grammar": `root ::= ("a"{0,10000}){0,10000}`}, "guided_grammar"},
		{"nested regex", map[string]any{"guided_regex": `(a{0,10000}){0,10000}`}, "guided_regex"},
		{"nested pattern", map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "n",
			"schema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string", "pattern": `^([a-z]{0,200}){0,200}$`}}}}}},
			"response_format.json_schema.schema"},
		{"4 MiB regex", map[string]any{"guided_regex": strings.Repeat("a", 4<<20)}, "guided_regex"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"model": textModel, "prompt": "Once", "max_tokens": 20, "stream": true}
			for k, v := range c.body {
				body[k] = v
			}
			work := testkit.StartWork()
			var eb ErrorBody
			decode(t, te.post(t, "/v1/completions", body), http.StatusBadRequest, &eb)
			if d := work(); d > 3*time.Second {
				t.Errorf("answered after %v", d)
			}
			if eb.Error.Param == nil || *eb.Error.Param != c.param || len(eb.Error.Message) > 400 {
				t.Errorf("error %+v, want param %s and a short message", eb.Error, c.param)
			}
		})
	}
}

// TestCompileAfterAdmission: a request's grammar is compiled once the
// request has the model's turn, so a model that does not exist is a 404
// and a full queue a 429, whatever the schema (a schema that only the
// compile finds wrong shows which came first).
func TestCompileAfterAdmission(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 0}, false)
	bad := map[string]any{"type": "nonsense"}
	var eb ErrorBody
	decode(t, te.post(t, "/v1/completions", map[string]any{"model": "nope", "prompt": "x", "guided_json": bad}), http.StatusNotFound, &eb)
	decode(t, te.post(t, "/v1/completions", map[string]any{"model": textModel, "prompt": "x", "guided_json": bad}), http.StatusBadRequest, &eb)
	if eb.Error.Param == nil || *eb.Error.Param != "guided_json" {
		t.Errorf("bad schema: %+v", eb.Error)
	}
	cancel, done := startSlow(t, te, 1000)
	decode(t, te.post(t, "/v1/completions", map[string]any{"model": textModel, "prompt": "x", "guided_json": bad}), http.StatusTooManyRequests, &eb)
	cancel()
	<-done
}

// TestGrammarBoundAtRuntime: a grammar that compiles but whose matcher's
// configurations multiply with the text stops with a 400-coded error
// event naming the field once the matcher's tables reach their bound; the
// process's heap stays far under 1 GB meanwhile, and the model serves the
// next request.
func TestGrammarBoundAtRuntime(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, false)
	te.Engine.params = nil // full speed
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	work := testkit.StartWork()
	body := mustJSON(map[string]any{"model": textModel, "prompt": "Once", "max_tokens": 2000, "stream": true,
		"guided_grammar": `root ::= ("a"{1,100}){0,100}`})
	resp, err := http.Post(te.srv.URL+"/v1/completions", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	var eb ErrorBody
	if resp.StatusCode == http.StatusOK {
		evs := events(t, resp)
		if json.Unmarshal([]byte(evs[len(evs)-1]), &eb) != nil {
			t.Fatalf("the stream ended with %s, want an error event", evs[len(evs)-1])
		}
	} else {
		decode(t, resp, http.StatusBadRequest, &eb)
	}
	d := work()
	close(stop)
	<-sampled
	t.Logf("stopped after %v: %s; heap in use at most %d MiB", d, eb.Error.Message, peak.Load()>>20)
	if eb.Error.Code != http.StatusBadRequest || eb.Error.Param == nil || *eb.Error.Param != "guided_grammar" || !strings.Contains(eb.Error.Message, "automaton") {
		t.Errorf("error %+v, want a 400 naming guided_grammar", eb.Error)
	}
	if p := peak.Load(); p > 512<<20 {
		t.Errorf("heap in use reached %d MiB", p>>20)
	}
	if d > 30*time.Second {
		t.Errorf("took %v", d)
	}
	var ok map[string]any
	decode(t, te.post(t, "/v1/completions", map[string]any{"model": textModel, "prompt": "Once", "max_tokens": 3}), http.StatusOK, &ok)
}
