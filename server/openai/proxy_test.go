package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// vLLM's shapes, as its OpenAI server sends them: a chat stream from a
// reasoning model with --reasoning-parser (delta.reasoning_content) and a
// tool parser (delta.tool_calls), ending with the usage chunk of
// stream_options.include_usage and [DONE].
var vllmChatStream = []string{
	`data: {"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1750000000,"model":"deepseek-ai/DeepSeek-R1-Distill-Llama-70B","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n",
	`data: {"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1750000000,"model":"deepseek-ai/DeepSeek-R1-Distill-Llama-70B","choices":[{"index":0,"delta":{"reasoning_content":"The user asks about the weather"},"logprobs":null,"finish_reason":null}]}` + "\n\n",
	`data: {"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1750000000,"model":"deepseek-ai/DeepSeek-R1-Distill-Llama-70B","choices":[{"index":0,"delta":{"reasoning_content":" in Paris: call the tool."},"logprobs":null,"finish_reason":null}]}` + "\n\n",
	`data: {"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1750000000,"model":"deepseek-ai/DeepSeek-R1-Distill-Llama-70B","choices":[{"index":0,"delta":{"content":"Let me check."},"logprobs":null,"finish_reason":null}]}` + "\n\n",
	`data: {"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1750000000,"model":"deepseek-ai/DeepSeek-R1-Distill-Llama-70B","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-4b1e","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}` + "\n\n",
	`data: {"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1750000000,"model":"deepseek-ai/DeepSeek-R1-Distill-Llama-70B","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]}` + "\n\n",
	`data: {"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1750000000,"model":"deepseek-ai/DeepSeek-R1-Distill-Llama-70B","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}]}` + "\n\n",
	`data: {"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1750000000,"model":"deepseek-ai/DeepSeek-R1-Distill-Llama-70B","choices":[],"usage":{"prompt_tokens":18,"total_tokens":61,"completion_tokens":43,"prompt_tokens_details":null}}` + "\n\n",
	"data: [DONE]\n\n",
}

// vllmResponses are whole answers of vLLM: responses, its error bodies, a
// stream that fails midway (vLLM sends the error as an event).
var vllmResponses = map[string]struct {
	status int
	ctype  string
	body   string
}{
	"/v1/models":           {200, "application/json", `{"object":"list","data":[{"id":"Qwen/Qwen3-30B-A3B","object":"model","created":1750000000,"owned_by":"vllm","root":"Qwen/Qwen3-30B-A3B","parent":null,"max_model_len":32768,"permission":[{"id":"modelperm-1","object":"model_permission","created":1750000000,"allow_create_engine":false,"allow_sampling":true,"allow_logprobs":true,"allow_search_indices":false,"allow_view":true,"allow_fine_tuning":false,"organization":"*","group":null,"is_blocking":false}]}]}`},
	"/v1/chat/completions": {200, "application/json", `{"id":"chatcmpl-77aa","object":"chat.completion","created":1750000000,"model":"Qwen/Qwen3-30B-A3B","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"Paris weather: use the tool.","content":null,"tool_calls":[{"id":"chatcmpl-tool-8c","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}],"usage":{"prompt_tokens":20,"total_tokens":52,"completion_tokens":32,"prompt_tokens_details":null},"prompt_logprobs":null}`},
	"/v1/completions":      {200, "application/json", `{"id":"cmpl-3d","object":"text_completion","created":1750000000,"model":"Qwen/Qwen3-30B-A3B","choices":[{"index":0,"text":" there was a fox","logprobs":null,"finish_reason":"length","stop_reason":null,"prompt_logprobs":null}],"usage":{"prompt_tokens":4,"total_tokens":8,"completion_tokens":4,"prompt_tokens_details":null}}`},
	"/v1/too-long":         {400, "application/json", `{"error":{"message":"This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":"input_tokens","code":400}}`},
	"/v1/no-model":         {404, "application/json", `{"error":{"message":"The model ` + "`nope`" + ` does not exist.","type":"NotFoundError","param":"model","code":404}}`},
	"/v1/crash":            {500, "application/json", `{"error":{"message":"EngineCore encountered an issue. See stack trace (above) for the root cause.","type":"InternalServerError","param":null,"code":500}}`},
	"/v1/failing-stream": {200, "text/event-stream; charset=utf-8", vllmChatStream[0] + vllmChatStream[3] +
		`data: {"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}` + "\n\n" + "data: [DONE]\n\n"},
}

// fakeUpstream is an in-process vLLM: it replays vllmResponses, and
// /v1/stream sends vllmChatStream one event at a time, each after the
// test asks for it on next.
type fakeUpstream struct {
	srv  *httptest.Server
	next chan struct{}
	mu   sync.Mutex
	reqs []recorded
	gone chan struct{} // closed when a /v1/stream request's context ends early
	stop func()
}

type recorded struct {
	method, path, rawPath, query string
	header                       http.Header
	body                         []byte
}

func newFakeUpstream(t *testing.T) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{next: make(chan struct{}), gone: make(chan struct{})}
	var once sync.Once
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header.Clone(), body})
		f.mu.Unlock()
		path := strings.TrimPrefix(r.URL.Path, "/prefix")
		// Headers the proxy must not pass to the page's origin.
		w.Header().Set("Set-Cookie", "session=upstream")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Strict-Transport-Security", "max-age=63072000")
		w.Header().Set("Server", "uvicorn")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "99")
		w.Header().Set("X-Request-Id", "req-1")
		switch path {
		case "/v1/stream":
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			w.WriteHeader(200)
			for i, ev := range vllmChatStream {
				if i > 0 {
					select {
					case <-f.next:
					case <-r.Context().Done():
						once.Do(func() { close(f.gone) })
						return
					case <-time.After(10 * time.Second):
						return
					}
				}
				io.WriteString(w, ev)
				w.(http.Flusher).Flush()
			}
		case "/v1/html", "/v1/html-error", "/v1/no-type":
			// A front proxy's page, or an answer of no type (which a
			// browser would sniff).
			w.Header()["Content-Type"] = nil
			status := 200
			if path == "/v1/html" {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
			} else if path == "/v1/html-error" {
				w.Header().Set("Content-Type", "text/html")
				status = 502
			}
			w.WriteHeader(status)
			io.WriteString(w, `<html><script>fetch("/v1/models")</script></html>`)
		case "/v1/echo-key":
			// An upstream whose 401 quotes the Authorization header, as
			// some gateways do.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			auth, _ := json.Marshal(r.Header.Get("Authorization"))
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s. Authorization: %s","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
				strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), auth[1:len(auth)-1])
		case "/v1/slow-header":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "/v1/stall":
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			io.WriteString(w, vllmChatStream[0])
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		default:
			resp, ok := vllmResponses[path]
			if !ok {
				resp = vllmResponses["/v1/no-model"]
			}
			w.Header().Set("Content-Type", resp.ctype)
			w.WriteHeader(resp.status)
			io.WriteString(w, resp.body)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeUpstream) last(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("the upstream got no request")
	}
	return f.reqs[len(f.reqs)-1]
}

func (f *fakeUpstream) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// newTestProxy serves a Proxy to upstream (plus path) in a test server.
func newTestProxy(t *testing.T, cfg ProxyConfig) (*httptest.Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = log.New(logs, "", 0)
	p, err := NewProxy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, logs
}

func send(t *testing.T, ctx context.Context, method, url, body string, header ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, kv := range header {
		k, v, _ := strings.Cut(kv, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestProxyStreamsIncrementally: every event of a vLLM stream reaches the
// client byte for byte before the upstream sends the next.
func TestProxyStreamsIncrementally(t *testing.T) {
	up := newFakeUpstream(t)
	srv, _ := newTestProxy(t, ProxyConfig{Upstream: up.srv.URL})
	resp := send(t, context.Background(), "POST", srv.URL+"/v1/stream", `{"model":"m","messages":[],"stream":true}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for i, want := range vllmChatStream {
		if i > 0 {
			select {
			case up.next <- struct{}{}:
			case <-time.After(5 * time.Second):
				t.Fatalf("event %d: the upstream no longer waits to send it", i)
			}
		}
		got := make([]byte, len(want))
		done := make(chan error, 1)
		go func() { _, err := io.ReadFull(resp.Body, got); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d did not come through while the upstream waits: the proxy holds it back", i)
		}
		if string(got) != want {
			t.Fatalf("event %d:\n got %q\nwant %q", i, got, want)
		}
	}
	if rest, _ := io.ReadAll(resp.Body); len(rest) != 0 {
		t.Errorf("more after [DONE]: %q", rest)
	}
}

// TestProxyPassesResponses: answers and error bodies pass unchanged with
// their status, and only the headers about the body and rate limits.
func TestProxyPassesResponses(t *testing.T) {
	up := newFakeUpstream(t)
	srv, _ := newTestProxy(t, ProxyConfig{Upstream: up.srv.URL})
	for path, want := range vllmResponses {
		method, body := "POST", `{"model":"m"}`
		if path == "/v1/models" {
			method, body = "GET", ""
		}
		resp := send(t, context.Background(), method, srv.URL+path, body)
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want.status || string(got) != want.body {
			t.Errorf("%s: %d %q\nwant %d %q", path, resp.StatusCode, got, want.status, want.body)
		}
		h := resp.Header
		if h.Get("Content-Type") != want.ctype || h.Get("X-Ratelimit-Remaining-Requests") != "99" || h.Get("X-Request-Id") != "req-1" {
			t.Errorf("%s: headers %v", path, h)
		}
		for _, k := range []string{"Set-Cookie", "Access-Control-Allow-Origin", "Strict-Transport-Security", "Server"} {
			if v := h.Get(k); v != "" {
				t.Errorf("%s: the upstream's %s: %s came through", path, k, v)
			}
		}
	}
}

// TestProxyRequest: what reaches the upstream: the path under its base
// (with or without /v1, with a prefix), the query, the body as sent, the
// configured key in place of the client's, and no cookies.
func TestProxyRequest(t *testing.T) {
	up := newFakeUpstream(t)
	body := `{"model":"Qwen/Qwen3-30B-A3B","messages":[{"role":"user","content":"héllo"}],"chat_template_kwargs":{"enable_thinking":false}}`
	for _, c := range []struct{ base, key, wantPath, wantAuth string }{
		{up.srv.URL, "sk-server", "/v1/chat/completions", "Bearer sk-server"},
		{up.srv.URL + "/v1/", "sk-server", "/v1/chat/completions", "Bearer sk-server"},
		{up.srv.URL + "/prefix/v1", "", "/prefix/v1/chat/completions", "Bearer sk-client"},
	} {
		srv, _ := newTestProxy(t, ProxyConfig{Upstream: c.base, Key: c.key})
		resp := send(t, context.Background(), "POST", srv.URL+"/v1/chat/completions?api-version=1", body,
			"Authorization: Bearer sk-client", "Cookie: session=page", "X-Request-Id: abc", "Accept: application/json")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r := up.last(t)
		if r.method != "POST" || r.path != c.wantPath || r.query != "api-version=1" || string(r.body) != body {
			t.Errorf("base %s: upstream got %s %s?%s %q", c.base, r.method, r.path, r.query, r.body)
		}
		if got := r.header.Get("Authorization"); got != c.wantAuth {
			t.Errorf("base %s: Authorization %q, want %q", c.base, got, c.wantAuth)
		}
		if r.header.Get("Cookie") != "" || r.header.Get("Content-Type") != "application/json" || r.header.Get("X-Request-Id") != "abc" {
			t.Errorf("base %s: upstream headers %v", c.base, r.header)
		}
	}
	// A header value that is not printable ASCII is the client's 400, not
	// the 502 of an upstream request Go refuses to send.
	srv0, _ := newTestProxy(t, ProxyConfig{Upstream: up.srv.URL})
	before := up.count()
	resp0 := send(t, context.Background(), "POST", srv0.URL+"/v1/chat/completions", body, "X-Request-Id: h\xc3\xa9llo")
	io.Copy(io.Discard, resp0.Body)
	resp0.Body.Close()
	if resp0.StatusCode != http.StatusBadRequest || up.count() != before {
		t.Errorf("non-ASCII X-Request-Id: status %d, %d requests upstream", resp0.StatusCode, up.count()-before)
	}
	// Escapes in the path pass as they are.
	srv, _ := newTestProxy(t, ProxyConfig{Upstream: up.srv.URL})
	resp := send(t, context.Background(), "GET", srv.URL+"/v1/models/Qwen%2BQwen3", "")
	resp.Body.Close()
	if r := up.last(t); r.path != "/v1/models/Qwen+Qwen3" {
		t.Errorf("escaped path reached the upstream as %q (raw %q)", r.path, r.rawPath)
	}
}

func TestProxyLimits(t *testing.T) {
	up := newFakeUpstream(t)
	srv, _ := newTestProxy(t, ProxyConfig{Upstream: up.srv.URL, MaxBody: 1024, Timeout: 300 * time.Millisecond})
	before := up.count()
	for _, c := range []struct {
		name, method, path, ctype, body string
		status                          int
	}{
		{"too large", "POST", "/v1/chat/completions", "application/json", `{"x":"` + strings.Repeat("a", 2000) + `"}`, 413},
		{"not JSON", "POST", "/v1/chat/completions", "application/x-www-form-urlencoded", `a=b`, 415},
		{"no content type", "POST", "/v1/chat/completions", "", `{}`, 415},
		{"GET with a body", "GET", "/v1/models", "application/json", `{}`, 400},
		{"DELETE", "DELETE", "/v1/models/x", "", "", 405},
		{"dot segments", "GET", "/v1/%2e%2e/metrics", "", "", 400},
		{"encoded slash", "GET", "/v1/models%2f..%2fmetrics", "", "", 400},
		{"empty segment", "GET", "/v1//models", "", "", 400},
	} {
		req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.body == "" {
			req.Body, req.ContentLength = nil, 0
		}
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb ErrorBody
		decode(t, resp, c.status, &eb)
		if eb.Error.Code != c.status {
			t.Errorf("%s: %+v", c.name, eb.Error)
		}
	}
	if n := up.count() - before; n != 0 {
		t.Errorf("%d refused requests reached the upstream", n)
	}

	// The upstream too slow to answer: 504; stalling midway: the client's
	// connection is cut, so that it does not take the part for the whole.
	var eb ErrorBody
	decode(t, send(t, context.Background(), "POST", srv.URL+"/v1/slow-header", `{}`), http.StatusGatewayTimeout, &eb)
	resp := send(t, context.Background(), "POST", srv.URL+"/v1/stall", `{}`)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) || string(got) != vllmChatStream[0] {
		t.Errorf("a stalled stream: %q, %v; want the first event, then an unexpected EOF", got, err)
	}

	// An upstream that is not there: 502.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	srv2, logs := newTestProxy(t, ProxyConfig{Upstream: dead})
	decode(t, send(t, context.Background(), "POST", srv2.URL+"/v1/chat/completions", `{}`), http.StatusBadGateway, &eb)
	if eb.Error.Type != "BadGatewayError" || strings.Contains(eb.Error.Message, ln.Addr().String()) {
		t.Errorf("unreachable upstream: %+v (the address is for the log only)", eb.Error)
	}
	if !strings.Contains(logs.String(), ln.Addr().String()) {
		t.Errorf("the log does not say what failed: %s", logs.String())
	}
}

// TestProxyClientLeaves: a client that disconnects cancels its upstream
// request (vLLM then aborts the generation).
func TestProxyClientLeaves(t *testing.T) {
	up := newFakeUpstream(t)
	srv, _ := newTestProxy(t, ProxyConfig{Upstream: up.srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	resp := send(t, ctx, "POST", srv.URL+"/v1/stream", `{"stream":true}`)
	first := make([]byte, len(vllmChatStream[0]))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-up.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request went on after its client left")
	}
}

func TestParseUpstream(t *testing.T) {
	for in, want := range map[string]string{
		"http://gpu:8000":         "http://gpu:8000",
		"http://gpu:8000/":        "http://gpu:8000",
		"https://gpu:8000/v1":     "https://gpu:8000",
		"https://gpu/serve/v1/":   "https://gpu/serve",
		"ftp://gpu":               "",
		"gpu:8000":                "",
		"http://user:pw@gpu:8000": "",
		"http://gpu:8000/v1?x=1":  "",
		"http://gpu:8000/v1#f":    "",
		"http:///v1":              "",
	} {
		u, err := ParseUpstream(in)
		switch {
		case want == "" && err == nil:
			t.Errorf("%q: accepted as %s", in, u)
		case want != "" && (err != nil || u.String() != want):
			t.Errorf("%q: %v, %v; want %s", in, u, err, want)
		}
	}
	if _, err := NewProxy(ProxyConfig{Upstream: "http://gpu:8000", Key: "a\r\nX-Evil: 1"}); err == nil {
		t.Error("a key with a line break was taken")
	}
}

func TestCleanAPIPath(t *testing.T) {
	for p, ok := range map[string]bool{
		"/v1/chat/completions": true, "/v1/models/Qwen%2BQwen3": true, "/v1/models/a.b": true,
		"/v1": false, "/v2/x": false, "/v1/../x": false, "/v1/./x": false, "/v1//x": false, "/v1/x/": false,
		"/v1/%2e%2e/x": false, "/v1/a%2Fb": false, "/v1/a%5cb": false, "/v1/a%00": false, "/v1/a\\b": false,
		"/v1/%252e%252e/x": false, "/v1/models/..;/x": false, "/v1/models/a;b": false,
	} {
		if CleanAPIPath(p) != ok {
			t.Errorf("CleanAPIPath(%q) = %v", p, !ok)
		}
	}
}

// TestProxyAnswersAreAPIContent: an upstream answer that is not JSON or
// Server-Sent Events (an HTML page, an answer of no type) is a 502 of the
// proxy's own, never passed to the page's origin; what passes carries
// nosniff; an upstream error that quotes the key the proxy sent has it
// taken out (the client's own key, with no key configured, is the
// client's to see).
func TestProxyAnswersAreAPIContent(t *testing.T) {
	up := newFakeUpstream(t)
	const key = "sk-server/9f8e<7d>"
	srv, logs := newTestProxy(t, ProxyConfig{Upstream: up.srv.URL, Key: key})
	for _, path := range []string{"/v1/html", "/v1/html-error", "/v1/no-type"} {
		resp := send(t, context.Background(), "POST", srv.URL+path, `{}`)
		var eb ErrorBody
		decode(t, resp, http.StatusBadGateway, &eb)
		if eb.Error.Type != "BadGatewayError" || !strings.Contains(eb.Error.Message, "only JSON and Server-Sent Events") {
			t.Errorf("%s: %+v", path, eb.Error)
		}
	}
	if !strings.Contains(logs.String(), "text/html") {
		t.Errorf("the log does not name the refused type:\n%s", logs.String())
	}
	resp := send(t, context.Background(), "POST", srv.URL+"/v1/chat/completions", `{}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("a JSON answer: status %d, headers %v", resp.StatusCode, resp.Header)
	}

	resp = send(t, context.Background(), "POST", srv.URL+"/v1/echo-key", `{}`, "Authorization: Bearer sk-client")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var eb map[string]any
	if resp.StatusCode != 401 || json.Unmarshal(body, &eb) != nil {
		t.Fatalf("echoed key: %d %s", resp.StatusCode, body)
	}
	if strings.Contains(string(body), "sk-server") || strings.Contains(string(body), "9f8e") || !strings.Contains(string(body), "[redacted]") {
		t.Errorf("the upstream key came through: %s", body)
	}
	if got := resp.Header.Get("Content-Length"); got != "" && got != fmt.Sprint(len(body)) {
		t.Errorf("Content-Length %s for %d bytes", got, len(body))
	}
	srv2, _ := newTestProxy(t, ProxyConfig{Upstream: up.srv.URL})
	resp = send(t, context.Background(), "POST", srv2.URL+"/v1/echo-key", `{}`, "Authorization: Bearer sk-client")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(body), "sk-client") {
		t.Errorf("no key configured: %d %s", resp.StatusCode, body)
	}
}
