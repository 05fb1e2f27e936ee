package e2e

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"wasmllm/internal/testkit"
	"wasmllm/internal/testkit/browsertest"
)

// packageFiles are what the npm package must hold.
var packageFiles = []string{"package.json", "README.md", "wasmllm.js", "remote.js", "wasmllm.d.ts", "webllm.js", "webllm.d.ts",
	"worker.js", "shared.js", "shared-worker.js", "loader.js", "wasm_exec.js", "wasmllm.wasm", "models/stories260K/manifest.json"}

// buildPackage runs scripts/package.sh (what make package runs) into a
// fresh folder with the given wasm and returns the folder.
func buildPackage(t *testing.T, wasm string) string {
	t.Helper()
	wasmExec, err := browsertest.WasmExecJS()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "wasmllm")
	cmd := exec.Command("bash", "scripts/package.sh", out, wasm, wasmExec)
	cmd.Dir = browsertest.RepoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/package.sh: %v\n%s", err, b)
	} else {
		t.Logf("%s", strings.TrimSpace(string(b)))
	}
	for _, f := range packageFiles {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the package lacks %s", f)
		}
	}
	return out
}

// npmPack packs dir with npm, which must be on PATH, and returns the
// tarball's path and the file list npm reports.
func npmPack(t *testing.T, npm, dir string) (string, []string) {
	t.Helper()
	dest := t.TempDir()
	cmd := exec.Command(npm, "pack", "--json", "--pack-destination", dest, dir)
	cmd.Dir = dest
	cmd.Stderr = io.Discard
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack %s: %v\n%s", dir, err, out)
	}
	var packs []struct {
		Filename string `json:"filename"`
		Files    []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if err := json.Unmarshal(out, &packs); err != nil || len(packs) != 1 {
		t.Fatalf("npm pack output %s: %v", out, err)
	}
	var files []string
	for _, f := range packs[0].Files {
		files = append(files, f.Path)
	}
	return filepath.Join(dest, packs[0].Filename), files
}

// untar extracts a package tarball into dir; npm puts the files under
// package/.
func untar(t *testing.T, tgz, dir string) string {
	t.Helper()
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || strings.Contains(h.Name, "..") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	return filepath.Join(dir, "package")
}

// TestPackage builds the npm package (scripts/package.sh, as make package
// does), packs it with npm pack, and serves the unpacked tarball from a
// plain static server with CORS (as a CDN serves npm packages) to a page
// of another origin that imports it with a plain <script type=module> and
// an import map: createEngine finds the worker and the wasm beside
// wasmllm.js, webllm.js's CreateMLCEngine loads the bundled model, and
// both reply as cmd/generate does.
func TestPackage(t *testing.T) {
	skipShort(t)
	dir := buildPackage(t, browsertest.Wasm(t))
	pkg := dir
	if npm, err := exec.LookPath("npm"); err != nil {
		if testkit.CI() {
			t.Fatal("CI=true, and npm is not found: npm pack would go unchecked")
		}
		t.Log("npm not found: npm pack is not checked; serving the package folder itself")
	} else {
		tgz, files := npmPack(t, npm, dir)
		for _, f := range packageFiles {
			if !slices.Contains(files, f) {
				t.Errorf("npm pack left out %s (packed %v)", f, files)
			}
		}
		if slices.Contains(files, ".wasmllm-package") {
			t.Errorf("npm pack took the marker file: %v", files)
		}
		pkg = untar(t, tgz, t.TempDir())
	}
	var manifest struct {
		Name, Type, Types string
		Exports           map[string]any `json:"exports"`
	}
	data, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err != nil || json.Unmarshal(data, &manifest) != nil {
		t.Fatalf("package.json: %v %s", err, data)
	}
	if manifest.Name != "wasmllm" || manifest.Type != "module" || manifest.Types != "./wasmllm.d.ts" || manifest.Exports["./webllm"] == nil {
		t.Errorf("package.json %s", data)
	}

	var mu sync.Mutex
	var fetched []string
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetched = append(fetched, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Headers", "Range")
		w.Header().Set("Access-Control-Expose-Headers", "Content-Range, Content-Length")
		if r.Method == http.MethodOptions {
			return
		}
		http.StripPrefix("/npm/wasmllm@0.1.0/", http.FileServer(http.Dir(pkg))).ServeHTTP(w, r)
	}))
	t.Cleanup(cdn.Close)
	base := cdn.URL + "/npm/wasmllm@0.1.0/"
	page := `<!doctype html>
<meta charset="utf-8">
<title>an app</title>
<script type="importmap">{"imports": {"wasmllm": "` + html.EscapeString(base) + `wasmllm.js", "wasmllm/webllm": "` + html.EscapeString(base) + `webllm.js"}}</script>
<script type="module">
import { createEngine } from "wasmllm";
import * as webllm from "wasmllm/webllm";
window.createEngine = createEngine;
window.webllm = webllm;
window.pageReady = true;
</script>
`
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	}))
	t.Cleanup(app.Close)
	b := browsertest.NewBrowser(t)
	b.Open(app.URL + "/")
	var got struct{ Direct, WebLLM, Model string }
	if err := b.Run(`(async () => {
		const e = await createEngine({model: "`+base+`models/stories260K/", backend: "cpu"});
		const direct = (await e.completions.create({prompt: "Once upon a time", max_tokens: 20, temperature: 0})).choices[0].text;
		await e.unload();
		const w = await webllm.CreateMLCEngine("stories260K");
		const r = await w.completions.create({prompt: "Once upon a time", max_tokens: 20, temperature: 0});
		return {Direct: direct, WebLLM: r.choices[0].text, Model: w.engineOf().info.model.url};
	})()`, &got); err != nil {
		t.Fatalf("the packaged modules on another origin: %v", err)
	}
	want := generate(t, "-model", browsertest.RepoFile("models/stories260K"), "-prompt", "Once upon a time", "-n", "20", "-temperature", "0")
	if got.Direct != want.Text || got.WebLLM != want.Text {
		t.Errorf("createEngine %q, CreateMLCEngine %q, generate %q", got.Direct, got.WebLLM, want.Text)
	}
	if got.Model != base+"models/stories260K/" {
		t.Errorf("prebuiltAppConfig's stories260K is %s, want the package's folder", got.Model)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range []string{"worker.js", "loader.js", "wasm_exec.js", "wasmllm.wasm"} {
		if !slices.Contains(fetched, "/npm/wasmllm@0.1.0/"+f) {
			t.Errorf("%s was not fetched from the package's server (%v)", f, fetched)
		}
	}
}

// TestPackageTypes compiles sample apps (e2e/ts: the whole OpenAI-shaped
// surface of wasmllm.d.ts, lines that must not compile marked
// @ts-expect-error, and pages written against WebLLM's API importing
// wasmllm/webllm) with tsc --strict against the package folder as a
// dependency in node_modules. TypeScript comes from npm, pinned by
// e2e/ts/package-lock.json, installed with npm ci into build/e2e-ts.
func TestPackageTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("installs TypeScript from npm (-short)")
	}
	npm, err := exec.LookPath("npm")
	testkit.Need(t, err == nil, "npm not found: the TypeScript check needs npm to install typescript (npm ci of e2e/ts/package-lock.json)")
	node, err := exec.LookPath("node")
	testkit.Need(t, err == nil, "node not found: the TypeScript check runs tsc with node")
	tsc := installTypeScript(t, npm)
	// The types do not need a real engine.
	fakeWasm := filepath.Join(t.TempDir(), "wasmllm.wasm")
	os.WriteFile(fakeWasm, []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	pkg := buildPackage(t, fakeWasm)

	proj := t.TempDir()
	src := browsertest.RepoFile("e2e/ts")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if ts := strings.HasSuffix(e.Name(), ".ts"); ts || e.Name() == "tsconfig.json" {
			data, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(proj, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if ts {
				n++
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(proj, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(pkg, filepath.Join(proj, "node_modules", "wasmllm")); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(node, append([]string{tsc}, args...)...)
		cmd.Dir = proj
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	version, _ := run("--version")
	if out, err := run("-p", ".", "--strict"); err != nil {
		t.Fatalf("tsc --strict (%s) on %d files: %v\n%s", strings.TrimSpace(version), n, err, out)
	}
	// The check bites: a role the API refuses does not compile.
	bad := "import { createEngine } from \"wasmllm\";\nexport const p = createEngine({ model: \"m\" }).then((e) => e.chat.completions.create({ messages: [{ role: \"narrator\", content: \"x\" }] }));\n"
	if err := os.WriteFile(filepath.Join(proj, "bad.ts"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run("-p", "."); err == nil || !strings.Contains(out, "narrator") {
		t.Errorf("a chat message with role narrator compiled: %v\n%s", err, out)
	}
	t.Logf("tsc %s --strict: %d sample apps against the package's types", strings.TrimSpace(version), n)
}

// installTypeScript installs e2e/ts's locked packages into build/e2e-ts
// with npm ci, unless that install is current, and returns tsc's path.
func installTypeScript(t *testing.T, npm string) string {
	t.Helper()
	dir := browsertest.RepoFile("build/e2e-ts")
	tsc := filepath.Join(dir, "node_modules", "typescript", "bin", "tsc")
	lock, err := os.ReadFile(browsertest.RepoFile("e2e/ts/package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(browsertest.RepoFile("e2e/ts/package.json"))
	if err != nil {
		t.Fatal(err)
	}
	// npm ci writes node_modules/.package-lock.json; the same lock there
	// means the install is current.
	if have, err := os.ReadFile(filepath.Join(dir, "package-lock.json")); err == nil && string(have) == string(lock) {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
			if _, err := os.Stat(tsc); err == nil {
				return tsc
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"package.json": manifest, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s (typescript for the type check): %v\n%s", dir, err, out)
	}
	if _, err := os.Stat(tsc); err != nil {
		t.Fatalf("npm ci did not install typescript: %v", err)
	}
	return tsc
}
