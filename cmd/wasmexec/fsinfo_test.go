package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestServerFSInfo(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	mustWrite(t, filepath.Join(root, "go.mod"), "module x\n")
	mustWrite(t, filepath.Join(root, "d", "f.bin"), "0123456789")
	mustWrite(t, filepath.Join(root, "d", "sub", "g"), "")
	mustWrite(t, filepath.Join(outside, "secret"), "no")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "d", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f.bin", filepath.Join(root, "d", "inside")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(outside, "out.json")
	s, err := newServer(filepath.Join(root, "go.mod"), filepath.Join(root, "go.mod"), root, pageConfig{Writable: []string{out}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.root.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()

	do := func(method, path, body string) (int, fsInfoJSON) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var info fsInfoJSON
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, path, res.StatusCode, raw, err)
		}
		return res.StatusCode, info
	}

	code, info := do("GET", "/fsinfo/d/f.bin", "")
	if code != 200 || info.Stat == nil || info.Stat.Size != 10 || info.Stat.Mode&0o170000 != modeFile || info.Stat.MtimeMs == 0 || info.Entries != nil {
		t.Errorf("fsinfo of a file = %d %+v", code, info)
	}
	code, info = do("GET", "/fsinfo/d?list=1", "")
	var names []string
	for _, e := range info.Entries {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	if code != 200 || info.Stat.Mode&0o170000 != modeDir || !slices.Equal(names, []string{"f.bin", "inside", "sub"}) {
		t.Errorf("listing = %d %+v, names %q (the escaping link left out)", code, info.Stat, names)
	}
	for _, e := range info.Entries {
		if e.Name == "inside" && (e.Stat.Size != 10 || e.Stat.Mode&0o170000 != modeFile) {
			t.Errorf("a link inside the root is not followed: %+v", e.Stat)
		}
		if e.Name == "sub" && e.Stat.Mode&0o170000 != modeDir {
			t.Errorf("sub: mode %o", e.Stat.Mode)
		}
	}
	if _, info = do("GET", "/fsinfo/", ""); info.Stat == nil || info.Stat.Mode&0o170000 != modeDir {
		t.Errorf("the root: %+v", info)
	}
	for path, want := range map[string]string{
		"/fsinfo/nope":         "ENOENT",
		"/fsinfo/go.mod/x":     "ENOTDIR",
		"/fsinfo/d/escape":     "EACCES",
		"/fsinfo/../secret":    "ENOENT",
		"/fsinfo/d/%2e%2e/..":  "ENOENT",
		"/fsinfo/d//f.bin":     "ENOENT",
		"/fsinfo/d/sub/../../": "ENOENT",
	} {
		if code, info := do("GET", path, ""); code < 400 || info.Code != want {
			t.Errorf("GET %s = %d %+v, want %s", path, code, info, want)
		}
	}

	// Writes reach only the allowed file.
	if code, info := do("POST", "/write/0?op=open&create=1&trunc=1", ""); code != 200 || info.Code != "" {
		t.Fatalf("open = %d %+v", code, info)
	}
	if code, info := do("POST", "/write/0?op=write&off=0", "hello"); code != 200 || info.N != 5 {
		t.Fatalf("write = %d %+v", code, info)
	}
	if code, info := do("POST", "/write/0?op=write&off=3", "LO!"); code != 200 || info.N != 3 {
		t.Fatalf("write at 3 = %d %+v", code, info)
	}
	if code, info := do("POST", "/write/0?op=write&append=1", "?"); code != 200 || info.N != 1 {
		t.Fatalf("append = %d %+v", code, info)
	}
	if _, info := do("POST", "/write/0?op=stat", ""); info.Stat == nil || info.Stat.Size != 7 {
		t.Fatalf("stat = %+v", info)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "helLO!?" {
		t.Fatalf("file = %q, %v", b, err)
	}
	if code, info := do("POST", "/write/0?op=open&create=1&excl=1", ""); code < 400 || info.Code != "EEXIST" {
		t.Errorf("exclusive create of an existing file = %d %+v", code, info)
	}
	for _, path := range []string{"/write/1?op=open&create=1", "/write/-1?op=open", "/write/x?op=open", "/write/0?op=write&off=-1", "/write/0?op=rm"} {
		if code, info := do("POST", path, "x"); code < 400 || info.Code == "" {
			t.Errorf("POST %s = %d %+v, want an error", path, code, info)
		}
	}
	if code, _, _ := get(t, ts.URL+"/write/0?op=stat"); code != http.StatusNotFound {
		t.Errorf("GET /write/ = %d, want 404 (writes are POSTs)", code)
	}
	if code, _, _ := get(t, ts.URL+"/wasmexec_fs.js"); code != 200 {
		t.Errorf("GET /wasmexec_fs.js = %d", code)
	}
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}
