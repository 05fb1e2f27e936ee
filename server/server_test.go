package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
)

// fixture is a site on disk: web/, build/wasmllm.wasm, models/ with one
// converted model, one broken one, and an outside/ folder that symlinks try
// to reach.
type fixture struct {
	dir    string
	cfg    Config
	model  *manifest.Manifest
	shard  []byte // first shard's bytes
	appJS  []byte
	logBuf *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, logBuf: &syncBuffer{}}
	f.appJS = bytes.Repeat([]byte("console.log('wasmllm');\n"), 100)
	files := map[string][]byte{
		"web/index.html":              []byte("<!doctype html><title>wasmllm</title>\n"),
		"web/app.js":                  f.appJS,
		"web/app.js.gz":               gz(t, f.appJS),
		"web/app.js.br":               []byte("pretend brotli bytes"),
		"web/worker.mjs":              []byte("export {};\n"),
		"web/style.css":               []byte("body{}\n"),
		"web/data.json":               []byte("{}\n"),
		"web/data.json.gz":            gz(t, []byte("{}\n")),
		"web/kernels/matmul.wgsl":     []byte("@compute @workgroup_size(64) fn main() {}\n"),
		"web/icon.svg":                []byte("<svg xmlns='http://www.w3.org/2000/svg'/>\n"),
		"web/app.webmanifest":         []byte("{\"name\":\"wasmllm\"}\n"),
		"web/sub/index.html":          []byte("<p>sub</p>\n"),
		"web/.secret":                 []byte("hidden\n"),
		"build/wasmllm.wasm":          append([]byte("\x00asm\x01\x00\x00\x00"), make([]byte, 4096)...),
		"build/wasmllm.wasm.gz":       gz(t, append([]byte("\x00asm\x01\x00\x00\x00"), make([]byte, 4096)...)),
		"outside/secret.txt":          []byte("top secret\n"),
		"models/broken/manifest.json": []byte(`{"format_version": 1, "shards": [`),
		"models/notamodel/readme.txt": []byte("no manifest here\n"),
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Siblings must not look older than their files (see serveFile).
	stamp := time.Now().Add(-time.Minute).Truncate(time.Second)
	for name := range files {
		os.Chtimes(filepath.Join(dir, name), stamp, stamp)
	}
	// A real converted model: the tiny Llama-3 Q4_0 GGUF in 64 KiB shards.
	g, err := loader.ReadGGUF(filepath.Join("..", "testdata", "models", "tiny-llama3-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := manifest.NewWriter(filepath.Join(dir, "models", "tiny"), 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for i := range g.Tensors {
		if err := w.Add(g.TensorAt(i)); err != nil {
			t.Fatal(err)
		}
	}
	f.model = &manifest.Manifest{Arch: model.ArchLlama, Quant: "keep", Config: model.Config{Arch: "llama", Vocab: 512, Hidden: 128,
		Layers: 4, Heads: 8, KVHeads: 2, HeadDim: 16, FFN: 384, RMSEps: 1e-5, RopeTheta: 5e5, MaxContext: 8192}}
	if err := w.Close(f.model); err != nil {
		t.Fatal(err)
	}
	if f.shard, err = os.ReadFile(filepath.Join(dir, "models", "tiny", f.model.Shards[0].File)); err != nil {
		t.Fatal(err)
	}
	// A gzip sibling next to a shard must never be served.
	os.WriteFile(filepath.Join(dir, "models", "tiny", f.model.Shards[0].File+".gz"), gz(t, f.shard), 0o644)

	// Symlinks: some stay inside their root (served), the rest try to leave it.
	links := map[string]string{
		"web/alias.js":        "app.js",
		"web/escape.txt":      "../outside/secret.txt",
		"web/escapedir":       "../outside",
		"web/abs.txt":         filepath.Join(dir, "outside", "secret.txt"),
		"models/evil":         "../outside",
		"models/tiny/leak.js": "../../outside/secret.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "outside", "manifest.json"), []byte("{}"), 0o644)
	f.cfg = Config{Web: filepath.Join(dir, "web"), Wasm: filepath.Join(dir, "build", "wasmllm.wasm"),
		Models: filepath.Join(dir, "models"), MaxAge: time.Minute}
	return f
}

func (f *fixture) handler(t *testing.T, cfg Config) http.Handler {
	t.Helper()
	h, err := newHandler(cfg, log.New(f.logBuf, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// do sends a request for localhost through the handler; header is "Key:
// value" pairs ("Host: name" sets the Host).
func (f *fixture) do(t *testing.T, h http.Handler, method, target string, header ...string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	r.Host = "localhost"
	for _, kv := range header {
		k, v, _ := strings.Cut(kv, ": ")
		if k == "Host" {
			r.Host = v
			continue
		}
		r.Header.Add(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMIMETypes(t *testing.T) {
	f := newFixture(t)
	h := f.handler(t, f.cfg)
	for path, want := range map[string]string{
		"/":                                      "text/html; charset=utf-8",
		"/app.js":                                "text/javascript; charset=utf-8",
		"/worker.mjs":                            "text/javascript; charset=utf-8",
		"/style.css":                             "text/css; charset=utf-8",
		"/data.json":                             "application/json",
		"/kernels/matmul.wgsl":                   "text/wgsl; charset=utf-8",
		"/icon.svg":                              "image/svg+xml",
		"/app.webmanifest":                       "application/manifest+json",
		"/wasmllm.wasm":                          "application/wasm",
		"/models/tiny/manifest.json":             "application/json",
		"/models/tiny/" + f.model.Shards[0].File: "application/octet-stream",
		"/models/":                               "application/json",
	} {
		resp := f.do(t, h, "GET", path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != want {
			t.Errorf("%s: %d %q, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
	}
}

func TestRange(t *testing.T) {
	f := newFixture(t)
	h := f.handler(t, f.cfg)
	shard := "/models/tiny/" + f.model.Shards[0].File
	size := len(f.shard)

	resp := f.do(t, h, "GET", shard, "Range: bytes=1000-1999")
	if got := body(t, resp); resp.StatusCode != 206 || !bytes.Equal(got, f.shard[1000:2000]) ||
		resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 1000-1999/%d", size) {
		t.Fatalf("range: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Range"), len(got))
	}
	// Resuming a shard from the middle to the end, as the browser loader does.
	resp = f.do(t, h, "GET", shard, fmt.Sprintf("Range: bytes=%d-", size/2))
	if got := body(t, resp); resp.StatusCode != 206 || !bytes.Equal(got, f.shard[size/2:]) {
		t.Fatalf("open range: %d, %d bytes", resp.StatusCode, len(got))
	}
	resp = f.do(t, h, "GET", shard, "Range: bytes=-100")
	if got := body(t, resp); resp.StatusCode != 206 || !bytes.Equal(got, f.shard[size-100:]) {
		t.Fatalf("suffix range: %d", resp.StatusCode)
	}
	for _, bad := range []string{fmt.Sprintf("bytes=%d-", size), fmt.Sprintf("bytes=%d-%d", size+10, size+20)} {
		resp = f.do(t, h, "GET", shard, "Range: "+bad)
		if resp.StatusCode != 416 || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
			t.Errorf("%s: %d %q, want 416", bad, resp.StatusCode, resp.Header.Get("Content-Range"))
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "" {
			t.Errorf("416 carries Cache-Control %q", cc)
		}
	}
	// If-Range with the current ETag resumes; with a stale one the whole shard comes back.
	etag := f.do(t, h, "HEAD", shard).Header.Get("ETag")
	resp = f.do(t, h, "GET", shard, "Range: bytes=10-19", "If-Range: "+etag)
	if resp.StatusCode != 206 {
		t.Errorf("If-Range current: %d", resp.StatusCode)
	}
	resp = f.do(t, h, "GET", shard, "Range: bytes=10-19", `If-Range: "0000000000000000"`)
	if got := body(t, resp); resp.StatusCode != 200 || len(got) != size {
		t.Errorf("If-Range stale: %d, %d bytes", resp.StatusCode, len(got))
	}
}

func TestETag(t *testing.T) {
	f := newFixture(t)
	h := f.handler(t, f.cfg)
	shard := "/models/tiny/" + f.model.Shards[0].File
	for _, path := range []string{"/app.js", "/wasmllm.wasm", "/models/tiny/manifest.json", shard, "/models/"} {
		resp := f.do(t, h, "GET", path)
		etag := resp.Header.Get("ETag")
		if resp.StatusCode != 200 || !strings.HasPrefix(etag, `"`) {
			t.Fatalf("%s: %d ETag %q", path, resp.StatusCode, etag)
		}
		resp = f.do(t, h, "GET", path, "If-None-Match: "+etag)
		if got := body(t, resp); resp.StatusCode != 304 || len(got) != 0 || resp.Header.Get("ETag") != etag {
			t.Errorf("%s If-None-Match: %d, %d bytes", path, resp.StatusCode, len(got))
		}
		if resp.Header.Get("Cross-Origin-Embedder-Policy") != "require-corp" {
			t.Errorf("%s: 304 without COEP", path)
		}
		resp = f.do(t, h, "GET", path, `If-None-Match: "stale"`)
		if resp.StatusCode != 200 {
			t.Errorf("%s stale If-None-Match: %d", path, resp.StatusCode)
		}
	}
	if got := f.do(t, h, "GET", shard).Header.Get("ETag"); got != `"`+f.model.Shards[0].SHA256[:16]+`"` {
		t.Errorf("shard ETag %s is not its content hash", got)
	}
	// Changing a page changes its ETag.
	before := f.do(t, h, "GET", "/app.js").Header.Get("ETag")
	os.WriteFile(filepath.Join(f.dir, "web", "app.js"), []byte("changed();"), 0o644)
	if after := f.do(t, h, "GET", "/app.js").Header.Get("ETag"); after == before {
		t.Error("ETag did not change with the file")
	}
}

func TestCacheControl(t *testing.T) {
	f := newFixture(t)
	h := f.handler(t, f.cfg)
	for path, want := range map[string]string{
		"/models/tiny/" + f.model.Shards[1].File: "public, max-age=31536000, immutable",
		"/models/tiny/manifest.json":             "public, max-age=60",
		"/":                                      "public, max-age=60",
		"/app.js":                                "public, max-age=60",
		"/wasmllm.wasm":                          "public, max-age=60",
		"/models/":                               "no-cache",
	} {
		if got := f.do(t, h, "GET", path).Header.Get("Cache-Control"); got != want {
			t.Errorf("%s: Cache-Control %q, want %q", path, got, want)
		}
	}
	// A hashed name outside /models/ is not a shard.
	os.WriteFile(filepath.Join(f.dir, "web", "x-0123456789abcdef.bin"), []byte("x"), 0o644)
	if got := f.do(t, h, "GET", "/x-0123456789abcdef.bin").Header.Get("Cache-Control"); got != "public, max-age=60" {
		t.Errorf("hashed name in web/: %q", got)
	}
	if got := f.do(t, h, "GET", "/nope.js").Header.Get("Cache-Control"); got != "" {
		t.Errorf("404 carries Cache-Control %q", got)
	}
	cfg := f.cfg
	cfg.MaxAge = 0
	if got := f.do(t, f.handler(t, cfg), "GET", "/app.js").Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("-max-age 0: %q", got)
	}
}

func TestPrecompressed(t *testing.T) {
	f := newFixture(t)
	h := f.handler(t, f.cfg)
	cases := []struct {
		path, accept, enc string
	}{
		{"/app.js", "gzip, deflate, br, zstd", "br"},
		{"/app.js", "gzip", "gzip"},
		{"/app.js", "br;q=0, gzip", "gzip"},
		{"/app.js", "br;q=0.5, gzip;q=0.9", "gzip"},
		{"/app.js", "*", "br"},
		{"/app.js", "*;q=0", ""},
		{"/app.js", "identity", ""},
		{"/app.js", "", ""},
		{"/data.json", "br, gzip", "gzip"}, // no .br sibling
		{"/style.css", "br, gzip", ""},     // no sibling at all
		{"/wasmllm.wasm", "gzip, br", "gzip"},
	}
	for _, tc := range cases {
		var hdr []string
		if tc.accept != "" {
			hdr = append(hdr, "Accept-Encoding: "+tc.accept)
		}
		resp := f.do(t, h, "GET", tc.path, hdr...)
		got := body(t, resp)
		if enc := resp.Header.Get("Content-Encoding"); enc != tc.enc || resp.StatusCode != 200 {
			t.Errorf("%s with %q: %d Content-Encoding %q, want %q", tc.path, tc.accept, resp.StatusCode, enc, tc.enc)
			continue
		}
		if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("%s: no Vary: Accept-Encoding", tc.path)
		}
		if tc.path == "/app.js" {
			want := map[string][]byte{"": f.appJS, "gzip": gz(t, f.appJS), "br": []byte("pretend brotli bytes")}[tc.enc]
			if tc.enc == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(got))
				if err != nil {
					t.Fatal(err)
				}
				got, _ = io.ReadAll(zr)
				want = f.appJS
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s: body differs", tc.path, tc.enc)
			}
		}
	}
	// A sibling older than its file is stale and not served.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(f.dir, "web", "app.js.br"), old, old)
	if enc := f.do(t, h, "GET", "/app.js", "Accept-Encoding: br, gzip").Header.Get("Content-Encoding"); enc != "gzip" {
		t.Errorf("stale .br: Content-Encoding %q, want gzip", enc)
	}
	// Encoded and identity responses carry different ETags.
	a := f.do(t, h, "GET", "/app.js").Header.Get("ETag")
	b := f.do(t, h, "GET", "/app.js", "Accept-Encoding: gzip").Header.Get("ETag")
	if a == b {
		t.Errorf("identity and gzip share ETag %s", a)
	}
	// Shards are never compressed, even with a .gz beside them.
	shard := "/models/tiny/" + f.model.Shards[0].File
	resp := f.do(t, h, "GET", shard, "Accept-Encoding: gzip, br")
	if got := body(t, resp); resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(got, f.shard) ||
		strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("shard: Content-Encoding %q Vary %q", resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"))
	}
}

func TestCrossOriginHeaders(t *testing.T) {
	f := newFixture(t)
	h := f.handler(t, f.cfg)
	reqs := []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/app.js"}, {"GET", "/missing"}, {"GET", "/models/"}, {"HEAD", "/wasmllm.wasm"},
		{"POST", "/"}, {"OPTIONS", "/"}, {"GET", "/a/../b"}, {"GET", "/models/tiny/manifest.json"},
	}
	for _, rq := range reqs {
		resp := f.do(t, h, rq.method, rq.path, "Origin: https://evil.example")
		hd := resp.Header
		if hd.Get("Cross-Origin-Opener-Policy") != "same-origin" || hd.Get("Cross-Origin-Embedder-Policy") != "require-corp" ||
			hd.Get("Cross-Origin-Resource-Policy") != "same-origin" {
			t.Errorf("%s %s (%d): COOP %q COEP %q CORP %q", rq.method, rq.path, resp.StatusCode,
				hd.Get("Cross-Origin-Opener-Policy"), hd.Get("Cross-Origin-Embedder-Policy"), hd.Get("Cross-Origin-Resource-Policy"))
		}
		if hd.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s: CORS without -cors", rq.method, rq.path)
		}
	}
}

func TestCORS(t *testing.T) {
	f := newFixture(t)
	cfg := f.cfg
	cfg.CORS = "*"
	h := f.handler(t, cfg)
	resp := f.do(t, h, "GET", "/models/tiny/manifest.json", "Origin: https://site.example")
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Cross-Origin-Resource-Policy") != "cross-origin" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Content-Range") {
		t.Errorf("-cors *: %v", resp.Header)
	}
	resp = f.do(t, h, "OPTIONS", "/models/tiny/manifest.json", "Origin: https://site.example",
		"Access-Control-Request-Method: GET", "Access-Control-Request-Headers: range")
	if resp.StatusCode != 204 || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Range") ||
		resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}

	cfg.CORS = "https://a.example, https://b.example/"
	h = f.handler(t, cfg)
	for origin, allowed := range map[string]bool{"https://a.example": true, "https://b.example": true, "https://c.example": false, "": false} {
		resp := f.do(t, h, "GET", "/app.js", "Origin: "+origin)
		got, want := resp.Header.Get("Access-Control-Allow-Origin"), ""
		if allowed {
			want = origin
		}
		if got != want || resp.Header.Get("Vary") != "Origin" {
			t.Errorf("origin %q: Allow-Origin %q Vary %q", origin, got, resp.Header.Get("Vary"))
		}
	}
	if _, err := newHandler(Config{CORS: "example.com"}, log.New(io.Discard, "", 0)); err == nil {
		t.Error("-cors example.com accepted")
	}
}

// TestPathSafety sends traversal attempts over a real connection, so that no
// client library cleans them first.
func TestPathSafety(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(f.handler(t, f.cfg))
	defer srv.Close()
	cases := map[string]int{
		"/../outside/secret.txt":                    400,
		"/%2e%2e/outside/secret.txt":                400,
		"/sub/..%2f..%2foutside/secret.txt":         400,
		"/..%2foutside%2fsecret.txt":                400,
		"/..%5coutside%5csecret.txt":                400,
		"/app.js%00.html":                           400,
		"/models/../outside/secret.txt":             400,
		"/models/tiny/..%2f..%2foutside/secret.txt": 400,
		"/models/%2e%2e/outside/secret.txt":         400,
		"//etc/passwd":                              400,
		"/./app.js":                                 400,
		"/escape.txt":                               404, // relative symlink out of web/
		"/escapedir/secret.txt":                     404, // symlinked folder out of web/
		"/abs.txt":                                  404, // absolute symlink
		"/models/evil/secret.txt":                   404, // model folder symlinked out
		"/models/evil/manifest.json":                404,
		"/models/tiny/leak.js":                      404,
		"/.secret":                                  404,
		"/models/.tiny.tmp-1/manifest.json":         404,
		"/alias.js":                                 200, // symlink inside the root is fine
		"/app.js":                                   200,
	}
	for target, want := range cases {
		status, resp := rawGet(t, srv.Listener.Addr().String(), target)
		if status != want {
			t.Errorf("GET %s: %d, want %d", target, status, want)
		}
		if strings.Contains(resp, "top secret") || strings.Contains(resp, "hidden") {
			t.Errorf("GET %s leaked: %q", target, resp)
		}
	}
	if !strings.Contains(f.logBuf.String(), "refused /escape.txt") {
		t.Errorf("symlink escape not logged:\n%s", f.logBuf.String())
	}
}

// rawGet sends a GET with target written verbatim and returns the status
// and the whole response.
func rawGet(t *testing.T, addr, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestListing(t *testing.T) {
	f := newFixture(t)
	os.MkdirAll(filepath.Join(f.dir, "models", ".tiny.tmp-123"), 0o755)
	os.WriteFile(filepath.Join(f.dir, "models", ".tiny.tmp-123", "manifest.json"), []byte("{}"), 0o644)
	h := f.handler(t, f.cfg)
	for _, path := range []string{"/models/", "/models"} {
		resp := f.do(t, h, "GET", path)
		var got modelListing
		if err := json.Unmarshal(body(t, resp), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Models) != 2 {
			t.Fatalf("%s: %+v", path, got)
		}
		broken, tiny := got.Models[0], got.Models[1]
		if broken.Name != "broken" || !strings.Contains(broken.Error, "manifest.json") || broken.Arch != "" {
			t.Errorf("broken: %+v", broken)
		}
		want := modelEntry{Name: "tiny", URL: "/models/tiny/", Manifest: "/models/tiny/manifest.json", FormatVersion: f.model.FormatVersion,
			Arch: "llama", Quant: "keep", Bytes: f.model.TotalBytes(), Shards: len(f.model.Shards), Tensors: 40}
		if tiny != want {
			t.Errorf("tiny: %+v\nwant %+v", tiny, want)
		}
	}
	// The manifest URL from the listing works.
	resp := f.do(t, h, "GET", "/models/tiny/manifest.json")
	if m, err := manifest.Parse(body(t, resp)); err != nil || len(m.Shards) != len(f.model.Shards) {
		t.Fatalf("manifest: %v", err)
	}
	// No models folder: an empty list, not an error.
	cfg := f.cfg
	cfg.Models = filepath.Join(f.dir, "nope")
	resp = f.do(t, f.handler(t, cfg), "GET", "/models/")
	if got := strings.TrimSpace(string(body(t, resp))); resp.StatusCode != 200 || got != "{\n  \"models\": []\n}" {
		t.Errorf("no models folder: %d %q", resp.StatusCode, got)
	}
}

func TestMethodsAndDirectories(t *testing.T) {
	f := newFixture(t)
	h := f.handler(t, f.cfg)
	resp := f.do(t, h, "POST", "/app.js")
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Errorf("POST: %d %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	resp = f.do(t, h, "HEAD", "/app.js")
	if got := body(t, resp); resp.StatusCode != 200 || len(got) != 0 || resp.Header.Get("Content-Length") != fmt.Sprint(len(f.appJS)) {
		t.Errorf("HEAD: %d, %d bytes, Content-Length %q", resp.StatusCode, len(got), resp.Header.Get("Content-Length"))
	}
	resp = f.do(t, h, "GET", "/sub?x=1")
	if resp.StatusCode != 301 || resp.Header.Get("Location") != "/sub/?x=1" {
		t.Errorf("dir redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := string(body(t, f.do(t, h, "GET", "/sub/"))); got != "<p>sub</p>\n" {
		t.Errorf("sub/index.html: %q", got)
	}
	if resp := f.do(t, h, "GET", "/models/tiny/"); resp.StatusCode != 404 {
		t.Errorf("model folder without index: %d", resp.StatusCode)
	}
	// A FIFO is not a regular file: 404, and no hang.
	fifo := filepath.Join(f.dir, "web", "pipe.js")
	if err := mkfifo(fifo); err == nil {
		if resp := f.do(t, h, "GET", "/pipe.js"); resp.StatusCode != 404 {
			t.Errorf("fifo: %d", resp.StatusCode)
		}
	}
}

func TestLogLine(t *testing.T) {
	f := newFixture(t)
	h := f.handler(t, f.cfg)
	shard := "/models/tiny/" + f.model.Shards[0].File
	f.do(t, h, "GET", shard, "Range: bytes=100-199")
	f.do(t, h, "GET", "/missing%0Ax", "Range: bytes=0-1\tnext")
	lines := strings.Split(strings.TrimSpace(f.logBuf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per request, got:\n%s", f.logBuf.String())
	}
	fields := strings.Fields(lines[0])
	if len(fields) != 6 || fields[0] != "GET" || fields[1] != shard || fields[2] != "206" || fields[3] != "100" || fields[4] != "bytes=100-199" {
		t.Errorf("log line %q", lines[0])
	}
	if _, err := time.ParseDuration(fields[5]); err != nil {
		t.Errorf("duration %q: %v", fields[5], err)
	}
	if fields := strings.Fields(lines[1]); len(fields) != 6 || fields[1] != "/missing%0Ax" || fields[2] != "404" || fields[4] != "bytes=0-1_next" {
		t.Errorf("log line %q", lines[1])
	}
}

// TestGracefulShutdown cancels the server's context while a request is in
// flight: the request completes, then serve returns nil.
func TestGracefulShutdown(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "done")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, h, Limits{}, log.New(&logs, "", 0)) }()
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	<-started
	cancel()
	select {
	case err := <-served:
		t.Fatalf("serve returned %v with a request in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("new connections accepted during shutdown")
	}
	close(release)
	if b := <-got; b != "done" {
		t.Errorf("in-flight request got %q", b)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("log: %s", logs.String())
	}
}
