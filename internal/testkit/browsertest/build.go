package browsertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// BuildDir is where built artefacts go, under the repository root.
const BuildDir = "build/browsertest"

type built struct {
	once sync.Once
	path string
	err  error
}

var wasmBuild, serverBuild built

// goCmd returns a go command run in the repository root.
func goCmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// build runs go build of pkg into BuildDir/name, through a temporary name
// so that concurrent test binaries never see a partial file.
func build(b *built, name, pkg string, env ...string) (string, error) {
	b.once.Do(func() {
		dir := filepath.Join(RepoRoot(), BuildDir)
		if b.err = os.MkdirAll(dir, 0o755); b.err != nil {
			return
		}
		f, err := os.CreateTemp(dir, "."+name+".tmp-")
		if err != nil {
			b.err = err
			return
		}
		tmp := f.Name()
		f.Close()
		defer os.Remove(tmp)
		out, err := goCmd(env, "build", "-o", tmp, pkg).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			return
		}
		b.path = filepath.Join(dir, name)
		b.err = os.Rename(tmp, b.path)
	})
	return b.path, b.err
}

// Wasm builds the browser engine (./wasm, GOOS=js) once per test binary and
// returns its path.
func Wasm(t testing.TB) string {
	t.Helper()
	p, err := build(&wasmBuild, "wasmllm.wasm", "./wasm", "GOOS=js", "GOARCH=wasm")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ServerBinary builds the static server (the repository's main package)
// once per test binary and returns its path.
func ServerBinary(t testing.TB) string {
	t.Helper()
	p, err := build(&serverBuild, "wasmllm-server", ".")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var goroot struct {
	once sync.Once
	dir  string
	err  error
}

// WasmExecJS returns the path of the toolchain's wasm_exec.js.
func WasmExecJS() (string, error) {
	goroot.once.Do(func() {
		out, err := goCmd(nil, "env", "GOROOT").Output()
		if err != nil {
			goroot.err = fmt.Errorf("go env GOROOT: %v", err)
			return
		}
		goroot.dir = strings.TrimSpace(string(out))
	})
	if goroot.err != nil {
		return "", goroot.err
	}
	return filepath.Join(goroot.dir, "lib", "wasm", "wasm_exec.js"), nil
}

// TestPage is served at /test.html by WebDir: it imports wasmllm.js as
// window.wasmllm and records progress events in window.progress.
const TestPage = `<!doctype html>
<meta charset="utf-8">
<title>wasmllm test page</title>
<script type="module">
import * as wasmllm from "./wasmllm.js";
window.wasmllm = wasmllm;
window.progress = [];
window.onProgress = (p) => window.progress.push({...p, t: performance.now()});
window.pageReady = true;
</script>
`

// WebDir returns a fresh folder holding web/'s files and folders, wasm_exec.js and
// test.html, plus extra files (name -> contents).
func WebDir(t testing.TB, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	src := RepoFile("web")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	wasmExec, err := WasmExecJS()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{wasmExec: "wasm_exec.js"}
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			files[filepath.Join(src, e.Name())] = e.Name()
		}
	}
	for from, to := range files {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range entries { // vendored libraries (web/vendor/)
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			if err := os.CopyFS(filepath.Join(dir, e.Name()), os.DirFS(filepath.Join(src, e.Name()))); err != nil {
				t.Fatal(err)
			}
		}
	}
	extra2 := map[string]string{"test.html": TestPage}
	for k, v := range extra {
		extra2[k] = v
	}
	for name, body := range extra2 {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
