package server

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModelFolderSandboxed: everything under /models/ carries CSP sandbox;
// what the loader fetches keeps its type, anything else (a page, an SVG, a
// script) is a nosniff download, so none of it runs on the app's origin.
func TestModelFolderSandboxed(t *testing.T) {
	f := newFixture(t)
	tiny := filepath.Join(f.dir, "models", "tiny")
	for name, data := range map[string]string{
		"evil.html":             "<script>alert(document.cookie)</script>",
		"evil.svg":              "<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>",
		"evil.js":               "alert(1)",
		"README.md":             "# tiny\n",
		"tokenizer.json":        "{}",
		"tokenizer_config.json": "{}",
		"chat_template.jinja":   "{{ messages }}",
		"tok512.bin":            "tok",
		"tokenizer.gguf":        "GGUF",
	} {
		os.WriteFile(filepath.Join(tiny, name), []byte(data), 0o644)
	}
	os.MkdirAll(filepath.Join(tiny, "sub"), 0o755)
	os.WriteFile(filepath.Join(tiny, "sub", "manifest.json"), []byte("{}"), 0o644)
	h := f.handler(t, f.cfg)
	shard := f.model.Shards[0].File
	for name, want := range map[string]string{ // "" for a download
		"manifest.json":         "application/json",
		shard:                   "application/octet-stream",
		"tokenizer.json":        "application/json",
		"tokenizer_config.json": "application/json",
		"chat_template.jinja":   "text/plain; charset=utf-8",
		"tok512.bin":            "application/octet-stream",
		"tokenizer.gguf":        "application/octet-stream",
		"evil.html":             "",
		"evil.svg":              "",
		"evil.js":               "",
		"README.md":             "",
		"sub/manifest.json":     "", // not the folder's manifest
	} {
		for _, method := range []string{"GET", "HEAD"} {
			resp := f.do(t, h, method, "/models/tiny/"+name, "Accept-Encoding: gzip")
			hd := resp.Header
			ct, cd := hd.Get("Content-Type"), hd.Get("Content-Disposition")
			if resp.StatusCode != 200 || hd.Get("Content-Security-Policy") != "sandbox" || hd.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s %s: %d CSP %q nosniff %q", method, name, resp.StatusCode, hd.Get("Content-Security-Policy"), hd.Get("X-Content-Type-Options"))
			}
			switch {
			case want == "" && (ct != "application/octet-stream" || cd != "attachment"):
				t.Errorf("%s %s: Content-Type %q Content-Disposition %q, want a download", method, name, ct, cd)
			case want != "" && (ct != want || cd != ""):
				t.Errorf("%s %s: Content-Type %q Content-Disposition %q, want %q inline", method, name, ct, cd, want)
			}
		}
	}
	for _, p := range []string{"/models/", "/models/tiny/missing", "/models/tiny"} {
		if csp := f.do(t, h, "GET", p).Header.Get("Content-Security-Policy"); csp != "sandbox" {
			t.Errorf("%s: CSP %q", p, csp)
		}
	}
	// The app's own pages are not sandboxed.
	for _, p := range []string{"/", "/app.js", "/icon.svg", "/wasmllm.wasm"} {
		resp := f.do(t, h, "GET", p)
		if resp.Header.Get("Content-Security-Policy") != "" || resp.Header.Get("Content-Disposition") != "" {
			t.Errorf("%s: CSP %q Content-Disposition %q", p, resp.Header.Get("Content-Security-Policy"), resp.Header.Get("Content-Disposition"))
		}
	}
}

func TestIsModelFile(t *testing.T) {
	for name, want := range map[string]bool{
		"m/manifest.json": true, "m/shard-00000-0123456789abcdef.bin": true, "m/tokenizer.json": true,
		"m/tokenizer_config.json": true, "m/generation_config.json": true, "m/chat_template.jinja": true,
		"m/tokenizer.gguf": true, "m/tokenizer.bin": true, "m/tokenizer.model": true, "m/tok32000.bin": true,
		"manifest.json": false, "m/sub/manifest.json": false, "m/index.html": false, "m/tok.bin": false,
		"m/tokx.bin": false, "m/shard-00000-xyz.bin": false, "m/evil.svg": false, "m/manifest.json.html": false,
	} {
		if got := isModelFile(name); got != want {
			t.Errorf("isModelFile(%q) = %v", name, got)
		}
	}
}

// TestSymlinkToHidden: the hidden-name rule applies to where a symlink
// leads, not only to the requested name: x.txt -> .env is 404, however the
// link gets there, and so is a model folder linked to a hidden one.
func TestSymlinkToHidden(t *testing.T) {
	f := newFixture(t)
	tiny := filepath.Join(f.dir, "models", "tiny")
	os.WriteFile(filepath.Join(tiny, ".env"), []byte("SECRET=hunter2\n"), 0o644)
	os.MkdirAll(filepath.Join(tiny, ".git"), 0o755)
	os.WriteFile(filepath.Join(tiny, ".git", "config"), []byte("SECRET\n"), 0o644)
	tmp := filepath.Join(f.dir, "models", ".tiny.tmp-1")
	os.MkdirAll(tmp, 0o755)
	mf, _ := os.ReadFile(filepath.Join(tiny, "manifest.json"))
	os.WriteFile(filepath.Join(tmp, "manifest.json"), mf, 0o644)
	os.WriteFile(filepath.Join(tmp, "notes.txt"), []byte("SECRET\n"), 0o644)
	links := map[string]string{
		"models/tiny/x.txt":       ".env",
		"models/tiny/y.txt":       "../tiny/.env",
		"models/tiny/z.txt":       "./.git/config",
		"models/tiny/hop.txt":     "x.txt", // a link to a link to .env
		"models/tiny/gitdir":      ".git",
		"models/tiny/loop1":       "loop2",
		"models/tiny/loop2":       "loop1",
		"models/tiny/ok.txt":      "manifest.json",
		"models/staged":           ".tiny.tmp-1",
		"web/secret-alias.txt":    ".secret",
		"web/sub/secret-up.txt":   "../.secret",
		"web/sub/fine.html":       "index.html",
		"models/tiny/up-fine.bin": "../tiny/" + f.model.Shards[0].File,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(f.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	h := f.handler(t, f.cfg)
	for p, want := range map[string]int{
		"/models/tiny/x.txt":           404,
		"/models/tiny/y.txt":           404,
		"/models/tiny/z.txt":           404,
		"/models/tiny/hop.txt":         404,
		"/models/tiny/gitdir/config":   404,
		"/models/tiny/loop1":           404,
		"/models/staged/manifest.json": 404,
		"/models/staged/notes.txt":     404,
		"/secret-alias.txt":            404,
		"/sub/secret-up.txt":           404,
		"/models/tiny/ok.txt":          200,
		"/sub/fine.html":               200,
		"/models/tiny/up-fine.bin":     200,
		"/alias.js":                    200,
	} {
		resp := f.do(t, h, "GET", p)
		if b := body(t, resp); resp.StatusCode != want || bytes.Contains(b, []byte("SECRET")) || string(b) == "hidden\n" {
			t.Errorf("%s: %d, want %d (%d bytes)", p, resp.StatusCode, want, len(b))
		}
	}
	for _, m := range f.listing(t, h.(*handler)) {
		if m.Name == "staged" {
			t.Errorf("a folder linked to a hidden one is listed: %+v", m)
		}
	}
	if !strings.Contains(f.logBuf.String(), "refused /models/tiny/x.txt") {
		t.Errorf("not logged:\n%s", f.logBuf.String())
	}
}

// TestSanitize: whatever a client sends, the log line stays one line of
// plain text: no C0 or C1 controls (U+009B is a one-character CSI), line
// separators, bidi overrides or invalid UTF-8 get through unescaped.
func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"bytes=0-1":                "bytes=0-1",
		"a b\tc\r\nd\x1b[31m\x7f":  "a_b_c__d_[31m_",
		"x\u009b31my":              `x\u009b31my`,
		"\u0085next":               `\u0085next`,
		"a\u2028b\u2029c":          `a\u2028b\u2029c`,
		"\u202eevil\u202c":         `\u202eevil\u202c`,
		"\u2066\u2067\u2068\u2069": `\u2066\u2067\u2068\u2069`,
		"\u200f\u061c\ufeff":       `\u200f\u061c\ufeff`,
		"bad\xff\xc2utf8":          `bad\xff\xc2utf8`,
		`back\slash`:               `back\\slash`,
		"héllo 日本":                 "héllo_日本",
	} {
		if got := sanitize(in, 100); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	if got := sanitizeMsg("open a b: too many", 100); got != "open a b: too many" {
		t.Errorf("sanitizeMsg: %q", got)
	}
	// Cut at a character boundary, not inside one.
	if got := sanitize("ab日本", 4); got != "ab..." {
		t.Errorf("cut: %q", got)
	}
}

// TestLogLineC1: a Range header carrying C1 controls (and a path with
// them, percent-encoded in the request) logs escaped.
func TestLogLineC1(t *testing.T) {
	f := newFixture(t)
	h := f.handler(t, f.cfg)
	f.do(t, h, "GET", "/models/tiny/manifest.json", "Range: bytes=0-1\u009b2J\u202e")
	f.do(t, h, "GET", "/%C2%9B.txt")
	f.do(t, h, "GET", "/"+f.model.Shards[0].File+"\u009b")
	log := f.logBuf.String()
	for _, bad := range []string{"\u009b", "\u202e"} {
		if strings.Contains(log, bad) {
			t.Errorf("log holds %q:\n%s", bad, log)
		}
	}
	if !strings.Contains(log, `bytes=0-1\u009b2J\u202e`) {
		t.Errorf("log:\n%s", log)
	}
}

// TestRangeEdges: unsatisfiable suffix ranges (bytes=-0) are 416 with
// "Content-Range: bytes */SIZE", where ServeContent gave 206 with an
// invalid Content-Range; a suffix longer than the file is the whole file.
func TestRangeEdges(t *testing.T) {
	f := newFixture(t)
	os.WriteFile(filepath.Join(f.dir, "web", "empty.txt"), nil, 0o644)
	h := f.handler(t, f.cfg)
	shard := "/models/tiny/" + f.model.Shards[0].File
	size := len(f.shard)
	etag := f.do(t, h, "HEAD", shard).Header.Get("ETag")
	whole := fmt.Sprintf("bytes 0-%d/%d", size-1, size)
	for _, tc := range []struct {
		path, rng, ifRange string
		status             int
		contentRange       string
		body               []byte
	}{
		{shard, "bytes=-0", "", 416, fmt.Sprintf("bytes */%d", size), nil},
		{shard, "bytes=-000", "", 416, fmt.Sprintf("bytes */%d", size), nil},
		{shard, "bytes= -0 ", "", 416, fmt.Sprintf("bytes */%d", size), nil},
		{shard, "bytes=-0,-0", "", 416, fmt.Sprintf("bytes */%d", size), nil},
		{shard, "bytes=-0", etag, 416, fmt.Sprintf("bytes */%d", size), nil},
		{shard, "bytes=-0", `"stale"`, 200, "", f.shard},
		{shard, "bytes=0-0,-0", "", 206, fmt.Sprintf("bytes 0-0/%d", size), f.shard[:1]},
		{shard, "bytes=-1", "", 206, fmt.Sprintf("bytes %d-%d/%d", size-1, size-1, size), f.shard[size-1:]},
		{shard, fmt.Sprintf("bytes=-%d", size), "", 206, whole, f.shard},
		{shard, fmt.Sprintf("bytes=-%d", size+1000), "", 206, whole, f.shard},
		{shard, "bytes=-99999999999999999999", "", 416, "", nil}, // malformed: ServeContent's answer
		{"/empty.txt", "bytes=-5", "", 200, "", []byte{}},
		{"/empty.txt", "bytes=-0", "", 200, "", []byte{}},
		{"/models/", "bytes=-0", "", 416, "", nil},
	} {
		hdr := []string{"Range: " + tc.rng}
		if tc.ifRange != "" {
			hdr = append(hdr, "If-Range: "+tc.ifRange)
		}
		resp := f.do(t, h, "GET", tc.path, hdr...)
		b := body(t, resp)
		cr := resp.Header.Get("Content-Range")
		if resp.StatusCode != tc.status || (tc.contentRange != "" && cr != tc.contentRange) || (tc.body != nil && !bytes.Equal(b, tc.body)) {
			t.Errorf("%s %q If-Range %q: %d Content-Range %q, %d bytes; want %d %q", tc.path, tc.rng, tc.ifRange, resp.StatusCode, cr, len(b), tc.status, tc.contentRange)
		}
		if resp.StatusCode == 206 && !strings.HasPrefix(cr, "bytes ") {
			t.Errorf("%s %q: 206 with Content-Range %q", tc.path, tc.rng, cr)
		}
	}
	// The access log keeps the Range the client sent.
	if !strings.Contains(f.logBuf.String(), " 416 ") || !strings.Contains(f.logBuf.String(), " bytes=-0 ") {
		t.Errorf("log:\n%s", f.logBuf.String())
	}
}

func TestFixRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		size int64
		out  string
		ok   bool
	}{
		{"bytes=0-99", 100, "bytes=0-99", false},
		{"bytes=-5", 100, "bytes=-5", false},
		{"bytes=-0", 100, "bytes=100-", true},
		{"bytes=0-1,-0,5-6", 100, "bytes=0-1,5-6", true},
		{"bytes=-5", 0, "", true},
		{"bytes=0-5", 0, "bytes=0-5", false},
		{"items=-0", 100, "items=-0", false},
		{"", 100, "", false},
	} {
		if out, ok := fixRange(tc.in, tc.size); out != tc.out || ok != tc.ok {
			t.Errorf("fixRange(%q, %d) = %q %v, want %q %v", tc.in, tc.size, out, ok, tc.out, tc.ok)
		}
	}
}

// TestCORPFollowsCORS: with an allow-list, only a listed origin may embed
// responses (CORP cross-origin); any other gets same-origin, and the answer
// varies by Origin. -cors * lets every origin embed. The one exception: the
// app's scripts requested with no Origin (a worker's importScripts, as the
// cross-origin <wasmllm-chat> worker does) stay embeddable.
func TestCORPFollowsCORS(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		cors, origin, corp, acao string
		varyOrigin               bool
	}{
		{"https://a.example", "https://a.example", "cross-origin", "https://a.example", true},
		{"https://a.example", "https://evil.example", "same-origin", "", true},
		{"https://a.example", "", "same-origin", "", true},
		{"https://a.example", "null", "same-origin", "", true},
		{"*", "https://evil.example", "cross-origin", "*", false},
		{"*", "", "cross-origin", "*", false},
		{"", "https://a.example", "same-origin", "", false},
		{"", "", "same-origin", "", false},
	} {
		cfg := f.cfg
		cfg.CORS = tc.cors
		h := f.handler(t, cfg)
		for _, p := range []string{"/", "/app.js", "/worker.mjs", "/models/tiny/manifest.json", "/models/", "/missing", "/wasmllm.wasm"} {
			var hdr []string
			if tc.origin != "" {
				hdr = append(hdr, "Origin: "+tc.origin)
			}
			hd := f.do(t, h, "GET", p, hdr...).Header
			corp := tc.corp
			if tc.cors == "https://a.example" && tc.origin == "" && (p == "/app.js" || p == "/worker.mjs") {
				corp = "cross-origin" // importScripts
			}
			vary := strings.Join(hd.Values("Vary"), ",")
			if hd.Get("Cross-Origin-Resource-Policy") != corp || hd.Get("Access-Control-Allow-Origin") != tc.acao ||
				strings.Contains(vary, "Origin") != tc.varyOrigin {
				t.Errorf("-cors %q, Origin %q, %s: CORP %q ACAO %q Vary %q, want CORP %q", tc.cors, tc.origin, p,
					hd.Get("Cross-Origin-Resource-Policy"), hd.Get("Access-Control-Allow-Origin"), vary, corp)
			}
		}
	}
}
