package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPassEnv(t *testing.T) {
	got := passEnv([]string{
		"WASMLLM_MODEL=a=b", "GOFLAGS=-x", "HOME=/root", "PATH=/bin", "EXTRA=1", "BAD", "=x", "CI=true",
	}, "EXTRA, ,NONE")
	want := map[string]string{"WASMLLM_MODEL": "a=b", "GOFLAGS": "-x", "EXTRA": "1", "CI": "true"}
	if len(got) != len(want) {
		t.Fatalf("passEnv = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("passEnv[%q] = %q, want %q", k, got[k], v)
		}
	}
}

func TestCheckArgSize(t *testing.T) {
	if err := checkArgSize([]string{"prog.wasm", "-test.v"}, map[string]string{"GOOS": "js"}); err != nil {
		t.Fatalf("small argv: %v", err)
	}
	err := checkArgSize([]string{"prog.wasm", strings.Repeat("x", 8200)}, nil)
	if err == nil || !strings.Contains(err.Error(), "wasm_exec.js allows") {
		t.Fatalf("oversized argv: err = %v", err)
	}
}

func TestExtendTimeout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 10 * time.Minute},
		{[]string{"-test.timeout=1m0s"}, 10 * time.Minute},
		{[]string{"-test.v", "-test.timeout=20m0s"}, 20*time.Minute + 30*time.Second},
		{[]string{"-test.timeout=0s"}, 10 * time.Minute},
		{[]string{"-test.timeout=junk"}, 10 * time.Minute},
	} {
		if got := extendTimeout(10*time.Minute, tc.args); got != tc.want {
			t.Errorf("extendTimeout(10m, %q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestFindRepoRoot(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := findRepoRoot(sub)
	if err != nil || got != dir {
		t.Fatalf("findRepoRoot(%s) = %q, %v; want %q", sub, got, err, dir)
	}
}

func TestServer(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	mustWrite(t, filepath.Join(root, "go.mod"), "module x\n")
	mustWrite(t, filepath.Join(root, "testdata", "f.bin"), "0123456789")
	mustWrite(t, filepath.Join(outside, "secret"), "no")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	wasm := filepath.Join(outside, "prog.wasm")
	mustWrite(t, wasm, "\x00asm")
	js := filepath.Join(outside, "wasm_exec.js")
	mustWrite(t, js, "// js")

	s, err := newServer(wasm, js, root, pageConfig{Argv: []string{"</script><b>"}, Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.root.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()

	get := func(method, path string, hdr ...string) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}

	if code, body, _ := get("GET", "/"); code != 200 || strings.Contains(body, "</script><b>") || !strings.Contains(body, `\u003c/script\u003e`) {
		t.Errorf("GET / = %d, argv not escaped in:\n%s", code, body)
	}
	if code, _, h := get("GET", "/prog.wasm"); code != 200 || h.Get("Content-Type") != "application/wasm" {
		t.Errorf("GET /prog.wasm = %d %q", code, h.Get("Content-Type"))
	}
	if code, body, _ := get("GET", "/fs/testdata/f.bin"); code != 200 || body != "0123456789" {
		t.Errorf("GET /fs/testdata/f.bin = %d %q", code, body)
	}
	if code, body, _ := get("GET", "/fs/testdata/f.bin", "Range", "bytes=2-4"); code != 206 || body != "234" {
		t.Errorf("ranged GET = %d %q", code, body)
	}
	for _, p := range []string{"/fs/link", "/fs/../secret", "/fs/testdata", "/fs/nope", "/fs/%2e%2e/secret", "/other"} {
		if code, body, _ := get("GET", p); code != 404 || strings.Contains(body, "no") && !strings.Contains(body, "not found") {
			t.Errorf("GET %s = %d %q, want 404", p, code, body)
		}
	}
	if code, _, _ := get("PUT", "/fs/testdata/f.bin"); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT = %d, want 405", code)
	}
}

func TestOutputsWrite(t *testing.T) {
	var o, e bytes.Buffer
	w := &outputs{stdout: &o, stderr: &e}
	if err := w.write("1:aGk="); err != nil {
		t.Fatal(err)
	}
	if err := w.write("2:AP8K"); err != nil {
		t.Fatal(err)
	}
	if o.String() != "hi" || e.String() != "\x00\xff\n" {
		t.Errorf("stdout %q stderr %q", o.String(), e.String())
	}
	for _, bad := range []string{"nocolon", "1:!!"} {
		if err := w.write(bad); err == nil {
			t.Errorf("write(%q): no error", bad)
		}
	}
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
