package server

import (
	"bufio"
	"encoding/json"
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

	"wasmllm/server/openai"
)

// upstreamRecorder is a stand-in upstream that answers every request with
// a small JSON body and records the Authorization header each one brought.
type upstreamRecorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string // one per request, "" for none
}

func newUpstreamRecorder(t *testing.T) *upstreamRecorder {
	u := &upstreamRecorder{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.auth = append(u.auth, r.Header.Get("Authorization"))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstreamRecorder) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.auth...)
}

// rawRequest sends req (a whole HTTP/1.1 request) on a new connection to
// addr and returns the response with its body read.
func rawRequest(t *testing.T, addr, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// errorBody decodes an OpenAI-shaped error body, failing on anything else.
func errorBody(t *testing.T, body string) openai.ErrorInfo {
	t.Helper()
	var e openai.ErrorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not an OpenAI error body: %q (%v)", body, err)
	}
	return e.Error
}

func TestHostPolicy(t *testing.T) {
	for _, c := range []struct {
		addr  string
		extra []string
		host  string
		want  bool
	}{
		{"127.0.0.1:8080", nil, "127.0.0.1:8080", true},
		{"127.0.0.1:8080", nil, "127.0.0.1", true},
		{"127.0.0.1:8080", nil, "localhost:9999", true},
		{"127.0.0.1:8080", nil, "LocalHost.", true},
		{"127.0.0.1:8080", nil, "[::1]:8080", true},
		{"127.0.0.1:8080", nil, "[::1]", true},
		{"127.0.0.1:8080", nil, "192.168.1.20:8080", true}, // an address: no DNS answer is involved
		{"127.0.0.1:8080", nil, "", true},                  // HTTP/1.0
		{"127.0.0.1:8080", nil, "attacker.example:8080", false},
		{"127.0.0.1:8080", nil, "attacker.example", false},
		{"127.0.0.1:8080", nil, "localhost.attacker.example", false},
		{"127.0.0.1:8080", nil, "127.0.0.1.nip.io", false},
		{"127.0.0.1:8080", nil, "sub.localhost", false},
		{"gpu-box.lan:8080", nil, "gpu-box.lan:8080", true},
		{"gpu-box.lan:8080", nil, "GPU-BOX.LAN", true},
		{"gpu-box.lan:8080", nil, "other.lan", false},
		{":8080", []string{"chat.example.com"}, "chat.example.com", true},
		{":8080", []string{"chat.example.com"}, "www.chat.example.com", false},
		{":8080", []string{" .example.org "}, "example.org:80", true},
		{":8080", []string{".example.org"}, "a.b.example.org", true},
		{":8080", []string{".example.org"}, "badexample.org", false},
		{":8080", []string{"*"}, "anything.example", true},
	} {
		p, err := newHostPolicy(c.addr, c.extra)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.allows(c.host); got != c.want {
			t.Errorf("-addr %s -allowed-hosts %q: Host %q allowed %v, want %v", c.addr, c.extra, c.host, got, c.want)
		}
	}
	for _, bad := range []string{"http://x.example", "a b", "x.example/path", "a..b", "."} {
		if _, err := newHostPolicy("127.0.0.1:0", []string{bad}); err == nil || !strings.Contains(err.Error(), "-allowed-hosts") {
			t.Errorf("-allowed-hosts %q: %v", bad, err)
		}
	}
}

// TestDNSRebindingRefused is issue 39 #4's repro: a page whose name its
// owner pointed at 127.0.0.1 reaches a loopback server with its own name
// in Host. Every path answers 403, and nothing reaches the upstream, whose
// key such requests used to carry.
func TestDNSRebindingRefused(t *testing.T) {
	up := newUpstreamRecorder(t)
	cfg := smallSite(t, nil)
	cfg.Addr = "127.0.0.1:8080"
	cfg.API = APIConfig{Upstream: up.srv.URL, UpstreamKey: "sk-upstream"}
	addr, logs := startServe(t, cfg)
	for _, target := range []string{"/", "/models/", "/v1/models", "/v1/chat/completions"} {
		method, body := "GET", ""
		if strings.HasSuffix(target, "completions") {
			method, body = "POST", `{"model":"m","messages":[]}`
		}
		resp, got := rawRequest(t, addr, fmt.Sprintf("%s %s HTTP/1.1\r\nHost: rebind.attacker.example:8080\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", method, target, len(body), body))
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(got, "-allowed-hosts") {
			t.Errorf("%s %s: %d %q; want 403 naming -allowed-hosts", method, target, resp.StatusCode, got)
		}
		if strings.HasPrefix(target, "/v1/") {
			if e := errorBody(t, got); e.Type != "PermissionDeniedError" || e.Code != 403 {
				t.Errorf("%s: %+v", target, e)
			}
		}
	}
	if s := up.seen(); len(s) != 0 {
		t.Errorf("rebound requests reached the upstream: %q", s)
	}
	// The same requests by the server's own names are served.
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080"} {
		resp, _ := rawRequest(t, addr, "GET /v1/models HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
		if resp.StatusCode != 200 {
			t.Errorf("Host %s: %d", host, resp.StatusCode)
		}
	}
	if s := up.seen(); len(s) != 2 || s[0] != "Bearer sk-upstream" {
		t.Errorf("upstream saw %q", s)
	}
	waitLog(t, logs, "GET / 403 ", time.Second)
}

// TestClientKey: with a client key, /v1/ answers 401 in OpenAI's shape to
// a request without it (before reading its body, never echoing what was
// sent), serves one with it, and passes the client's key no further: the
// upstream gets its own key, or none. Static files and CORS preflights
// need no key.
func TestClientKey(t *testing.T) {
	const key = "sk-client-0123456789"
	for _, upstreamKey := range []string{"sk-upstream", ""} {
		up := newUpstreamRecorder(t)
		cfg := smallSite(t, nil)
		cfg.CORS = "https://app.example"
		cfg.API = APIConfig{Upstream: up.srv.URL, UpstreamKey: upstreamKey, Key: key}
		addr, _ := startServe(t, cfg)
		post := func(auth ...string) string {
			body := `{"model":"m","messages":[]}`
			req := "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
			for _, a := range auth {
				req += "Authorization: " + a + "\r\n"
			}
			return req + fmt.Sprintf("Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		}
		for _, req := range []string{
			post(),
			post("Bearer sk-wrong-0123456789"),
			post("Bearer " + key[:len(key)-1]),
			post("Bearer " + key + "x"),
			post("Basic " + key),
			post(key),
			post("Bearer "+key, "Bearer sk-wrong"),
			"GET /v1/models HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
		} {
			resp, got := rawRequest(t, addr, req)
			e := errorBody(t, got)
			if resp.StatusCode != 401 || e.Type != "AuthenticationError" || e.Code != 401 || e.Param != nil ||
				!strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%q: %d %v %q", req, resp.StatusCode, resp.Header, got)
			}
			if strings.Contains(got, "sk-") {
				t.Errorf("the 401 echoes a key: %q", got)
			}
		}
		if s := up.seen(); len(s) != 0 {
			t.Fatalf("requests without the key reached the upstream: %q", s)
		}
		for _, auth := range []string{"Bearer " + key, "bearer " + key} {
			if resp, got := rawRequest(t, addr, post(auth)); resp.StatusCode != 200 {
				t.Errorf("%s: %d %q", auth, resp.StatusCode, got)
			}
		}
		want := "Bearer " + upstreamKey
		if upstreamKey == "" {
			want = ""
		}
		if s := up.seen(); len(s) != 2 || s[0] != want || s[1] != want {
			t.Errorf("upstream key %q: the upstream saw Authorization %q, want %q", upstreamKey, s, want)
		}

		// Public: the page, and preflights (which carry no credentials).
		if resp, _ := rawRequest(t, addr, "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"); resp.StatusCode != 200 {
			t.Errorf("GET / with a client key: %d", resp.StatusCode)
		}
		resp, _ := rawRequest(t, addr, "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nOrigin: https://app.example\r\n"+
			"Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization, content-type\r\nConnection: close\r\n\r\n")
		if resp.StatusCode != 204 || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
		}
	}
}

// TestClientKeyBodyNotRead: a request without the key is answered at once
// and its connection closed, however much body it announces and however
// slowly it would send it.
func TestClientKeyBodyNotRead(t *testing.T) {
	up := newUpstreamRecorder(t)
	cfg := smallSite(t, nil)
	cfg.Limits.Read = 10 * time.Second
	cfg.API = APIConfig{Upstream: up.srv.URL, Key: "sk-client"}
	addr, _ := startServe(t, cfg)
	c := dialSmall(t, addr)
	start := time.Now()
	io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 401 || !resp.Close {
		t.Errorf("%d, close %v", resp.StatusCode, resp.Close)
	}
	waitClosed(t, c, br, 2*time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("closed after %v", d)
	}
}

// TestClientKeyEngine: the key guards the native engine's /v1/ too.
func TestClientKeyEngine(t *testing.T) {
	cfg := smallSite(t, nil)
	cfg.API = APIConfig{Engine: true, Key: "sk-client"}
	h, err := newHandler(cfg, log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for auth, want := range map[string]int{"": 401, "Bearer sk-nope": 401, "Bearer sk-client": 200} {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/models", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Authorization %q: %d, want %d", auth, resp.StatusCode, want)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	engine := APIConfig{Engine: true}
	for _, c := range []struct {
		cfg  Config
		want string // "" for none
	}{
		{Config{Addr: "127.0.0.1:8080", API: engine}, ""},
		{Config{Addr: "127.0.0.2:8080", API: engine}, ""},
		{Config{Addr: "localhost:8080", API: engine}, ""},
		{Config{Addr: "[::1]:8080", API: engine}, ""},
		{Config{Addr: "0.0.0.0:8080"}, ""}, // files only
		{Config{Addr: "0.0.0.0:8080", API: engine}, "-api-key-file"},
		{Config{Addr: "[::]:8080", API: engine}, "-no-api-key"},
		{Config{Addr: ":8080", API: APIConfig{Upstream: "http://gpu:8000"}}, "-api-key-file"},
		{Config{Addr: "192.168.1.5:8080", API: engine}, "-api-key-file"},
		{Config{Addr: "0.0.0.0:8080", API: APIConfig{Engine: true, Key: "k"}}, ""},
		{Config{Addr: "0.0.0.0:8080", API: APIConfig{Engine: true, NoKey: true}}, ""},
		{Config{Addr: "127.0.0.1:8080", API: APIConfig{Engine: true, NoKey: true, Key: "k"}}, "choose one"},
		{Config{Addr: "127.0.0.1:8080", CORS: "*", API: APIConfig{Upstream: "http://gpu", UpstreamKey: "u"}}, "-cors '*' with -upstream-key-file"},
		{Config{Addr: "127.0.0.1:8080", CORS: "https://a.example, *", API: APIConfig{Upstream: "http://gpu", UpstreamKey: "u", NoKey: true}}, "-cors '*'"},
		{Config{Addr: "127.0.0.1:8080", CORS: "*", API: APIConfig{Upstream: "http://gpu", UpstreamKey: "u", Key: "k"}}, ""},
		{Config{Addr: "127.0.0.1:8080", CORS: "https://a.example", API: APIConfig{Upstream: "http://gpu", UpstreamKey: "u"}}, ""},
		{Config{Addr: "127.0.0.1:8080", CORS: "*", API: engine}, ""}, // a warning
	} {
		err := c.cfg.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v; want %q", c.cfg, err, c.want)
		}
	}
}

func TestConfigWarnings(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{Config{Addr: "127.0.0.1:8080", API: APIConfig{Engine: true}}, nil},
		{Config{Addr: "0.0.0.0:8080"}, []string{"note: 0.0.0.0:8080 can be reached from other machines"}},
		{Config{Addr: "0.0.0.0:8080", API: APIConfig{Engine: true, Key: "k"}}, []string{"/v1/ to clients with the key"}},
		{Config{Addr: "0.0.0.0:8080", API: APIConfig{Engine: true, NoKey: true}}, []string{"warning: /v1/ answers anyone"}},
		{Config{Addr: "127.0.0.1:8080", CORS: "*", API: APIConfig{Engine: true}}, []string{"warning: -cors '*' without a client key"}},
		{Config{Addr: "127.0.0.1:8080", CORS: "*", API: APIConfig{Engine: true, Key: "k"}}, nil},
		{Config{Addr: "127.0.0.1:8080", AllowedHosts: []string{"*"}, API: APIConfig{Engine: true}}, []string{"DNS rebinding"}},
	} {
		got := c.cfg.warnings()
		if len(got) != len(c.want) {
			t.Errorf("%+v: %q, want %q", c.cfg, got, c.want)
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], c.want[i]) {
				t.Errorf("%+v: %q, want %q", c.cfg, got[i], c.want[i])
			}
		}
	}
}

// TestRunRefusesExposedAPI: Run checks before it listens (the address is
// TEST-NET-1, never this machine's: were the check gone, listening would
// fail with another error).
func TestRunRefusesExposedAPI(t *testing.T) {
	cfg := smallSite(t, nil)
	cfg.Addr = "192.0.2.1:0"
	cfg.API = APIConfig{Engine: true}
	err := Run(t.Context(), cfg, log.New(io.Discard, "", 0))
	if err == nil || !strings.Contains(err.Error(), "-no-api-key") {
		t.Fatalf("Run: %v", err)
	}
}

func TestExposed(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": false, "127.1.2.3:80": false, "[::1]:80": false, "[::ffff:127.0.0.1]:80": false,
		"localhost:80": false, "LOCALHOST.:80": false, "x.localhost:80": false,
		":80": true, "0.0.0.0:80": true, "[::]:80": true, "10.0.0.1:80": true, "[2001:db8::1]:80": true,
	} {
		if got := exposed(addr); got != want {
			t.Errorf("exposed(%q) = %v, want %v", addr, got, want)
		}
	}
}
