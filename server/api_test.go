package server

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"wasmllm/server/openai"
)

// TestAPIModelFolders: the API serves the models the listing shows, by
// the same rules, and loads them from inside the models folder.
func TestAPIModelFolders(t *testing.T) {
	f := newFixture(t)
	h, err := newHandler(f.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := modelFolders{h}
	names, err := m.Names()
	if err != nil || !slices.Equal(names, []string{"tiny"}) {
		t.Errorf("Names: %q, %v; want [tiny] (broken does not parse, evil leads outside)", names, err)
	}
	for _, name := range []string{"tiny", "broken"} {
		dir, err := m.Dir(name)
		if err != nil || dir != filepath.Join(f.cfg.Models, name) {
			t.Errorf("Dir(%q) = %q, %v", name, dir, err)
		}
	}
	for _, name := range []string{"evil", "../outside", "tiny/..", ".hidden", "notamodel", "nope", "", "a\x00b", `..\outside`} {
		if dir, err := m.Dir(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Dir(%q) = %q, %v; want fs.ErrNotExist", name, dir, err)
		}
	}
	gone := Config{Models: filepath.Join(f.dir, "none")}
	h2, _ := newHandler(gone, nil)
	if names, err := (modelFolders{h2}).Names(); err != nil || len(names) != 0 {
		t.Errorf("no models folder: %q, %v", names, err)
	}
}

// TestAPIEngine: -api serves /v1/ beside the static files, with the same
// access log and cross-origin headers; the static files still take no
// bodies.
func TestAPIEngine(t *testing.T) {
	f := newFixture(t)
	if err := os.CopyFS(filepath.Join(f.cfg.Models, "stories"), os.DirFS(filepath.Join("..", "models", "stories260K"))); err != nil {
		t.Fatal(err)
	}
	cfg := f.cfg
	cfg.API = APIConfig{Engine: true, Queue: 1}
	srv := httptest.NewServer(f.handler(t, cfg))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list openai.ModelList
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Data) != 2 || list.Data[0].ID != "stories" || list.Data[1].ID != "tiny" || resp.Header.Get("Cross-Origin-Embedder-Policy") != "require-corp" {
		t.Errorf("/v1/models: %+v, headers %v", list, resp.Header)
	}
	resp, err = http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model": "stories", "prompt": "Once", "max_tokens": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(data), `"completion_tokens":3`) {
		t.Errorf("completion: %d %s", resp.StatusCode, data)
	}
	// The fixture's tiny holds GGUF tensors, not the canonical set: it
	// does not load.
	resp, err = http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model": "tiny", "prompt": "text"}`))
	if err != nil {
		t.Fatal(err)
	}
	var eb openai.ErrorBody
	json.NewDecoder(resp.Body).Decode(&eb)
	resp.Body.Close()
	if resp.StatusCode != 500 || eb.Error.Code != 500 || strings.Contains(eb.Error.Message, f.dir) {
		t.Errorf("a model that does not load: %d %+v", resp.StatusCode, eb)
	}
	for path, status := range map[string]int{"/v1": 404, "/v1/%2e%2e/models": 400, "/v1/chat": 404} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status || !strings.Contains(string(data), `"error"`) {
			t.Errorf("GET %s: %d %s; want %d with an error body", path, resp.StatusCode, data, status)
		}
	}
	resp, err = http.Post(srv.URL+"/index.html", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST to a page: %d", resp.StatusCode)
	}
	logs := f.logBuf.String()
	for _, want := range []string{"GET /v1/models 200 ", "POST /v1/completions 200 ", "POST /v1/completions 500 ", "api: loaded stories", "api: completion stories: 2 prompt tokens", "api: loading tiny: "} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log has no %q:\n%s", want, logs)
		}
	}
}

// TestAPIUpstream: -upstream passes /v1/ on under the server's access log
// and headers; CORS preflights of /v1/ allow the API's methods and headers
// to the origins of -cors only.
func TestAPIUpstream(t *testing.T) {
	next := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		io.WriteString(w, "data: {\"auth\": \""+r.Header.Get("Authorization")+"\"}\n\n")
		w.(http.Flusher).Flush()
		if r.URL.Path == "/v1/stream" {
			select { // the second event only once the first is through
			case <-next:
			case <-time.After(10 * time.Second):
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	f := newFixture(t)
	cfg := f.cfg
	cfg.CORS = "https://app.example"
	cfg.API = APIConfig{Upstream: up.URL + "/v1", UpstreamKey: "sk-test"}
	srv := httptest.NewServer(f.handler(t, cfg))
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"stream": true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(data) != "data: {\"auth\": \"Bearer sk-test\"}\n\ndata: [DONE]\n\n" {
		t.Errorf("proxied: %q", data)
	}
	if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Errorf("the upstream's or a foreign origin's CORS header came through: %q", v)
	}
	if !strings.Contains(f.logBuf.String(), "POST /v1/chat/completions 200 ") {
		t.Errorf("no access-log line:\n%s", f.logBuf.String())
	}

	// Through the server's writers too, each event is flushed as it comes.
	req, _ = http.NewRequest("POST", srv.URL+"/v1/stream", strings.NewReader(`{"stream": true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("data: {\"auth\": \"Bearer sk-test\"}\n\n"))
	got := make(chan error, 1)
	go func() { _, err := io.ReadFull(resp.Body, first); got <- err }()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first event is held back while the upstream waits")
	}
	close(next)
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(rest) != "data: [DONE]\n\n" {
		t.Errorf("after the first event: %q", rest)
	}

	for origin, allowed := range map[string]bool{"https://app.example": true, "https://evil.example": false} {
		req, _ := http.NewRequest("OPTIONS", srv.URL+"/v1/chat/completions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type, authorization, x-stainless-os, bad header")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent || (h.Get("Access-Control-Allow-Origin") == origin) != allowed {
			t.Errorf("preflight from %s: %d %v", origin, resp.StatusCode, h)
		}
		if allowed {
			ah := h.Get("Access-Control-Allow-Headers")
			if !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || !strings.Contains(ah, "Authorization") ||
				!strings.Contains(ah, "x-stainless-os") || strings.Contains(ah, "bad header") {
				t.Errorf("preflight from %s: %v", origin, h)
			}
		}
	}
}

func TestAPIConfigErrors(t *testing.T) {
	f := newFixture(t)
	for _, a := range []APIConfig{
		{Engine: true, Upstream: "http://gpu:8000"},
		{Upstream: "gpu:8000"},
		{UpstreamKey: "sk"},
		{Engine: true, Queue: -1},
	} {
		cfg := f.cfg
		cfg.API = a
		if _, err := newHandler(cfg, nil); err == nil {
			t.Errorf("%+v: no error", a)
		} else if a.Engine && a.Upstream != "" && !strings.Contains(err.Error(), "exclusive") {
			t.Errorf("-api with -upstream: %v", err)
		}
	}
	// Without -api or -upstream, /v1/ is a path like any other.
	h := f.handler(t, f.cfg)
	if resp := f.do(t, h, "GET", "/v1/models"); resp.StatusCode != http.StatusNotFound || strings.Contains(string(body(t, resp)), `"error"`) {
		t.Errorf("/v1/models without the API: %d", resp.StatusCode)
	}
}
