package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/embed"
	"wasmllm/internal/testkit"
	"wasmllm/manifest"
	"wasmllm/search"
)

// repoFile returns a path relative to the repository root.
func repoFile(rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", filepath.FromSlash(rel))
}

// inputs makes a web folder, a wasm and wasm_exec.js, and a models folder
// holding a copy of the bundled stories260K.
func inputs(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	web := filepath.Join(dir, "web")
	write(t, filepath.Join(web, "index.html"), strings.Repeat("<p>a page that compresses well</p>\n", 50))
	write(t, filepath.Join(web, "app.js"), strings.Repeat("console.log('compressible');\n", 50))
	write(t, filepath.Join(web, "tiny.css"), "a{}")
	write(t, filepath.Join(web, ".hidden.js"), "secret")
	write(t, filepath.Join(web, "img", "logo.svg"), strings.Repeat("<svg></svg>", 40))
	wasm := filepath.Join(dir, "engine.wasm")
	write(t, wasm, "\x00asm"+strings.Repeat("\x01\x02\x03\x04 wasm body ", 4000))
	wasmExec := filepath.Join(dir, "wasm_exec.js")
	write(t, wasmExec, strings.Repeat("// the Go runtime glue\n", 100))
	models := filepath.Join(dir, "models")
	if err := os.CopyFS(filepath.Join(models, "stories260K"), os.DirFS(repoFile("models/stories260K"))); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(models, "not-a-model", "notes.txt"), "no manifest here")
	return Options{Out: filepath.Join(dir, "dist"), Web: web, Wasm: wasm, WasmExec: wasmExec, Models: models}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(read(t, path)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

func TestBuild(t *testing.T) {
	o := inputs(t)
	r, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	out := o.Out
	for _, f := range []string{"index.html", "app.js", "tiny.css", "img/logo.svg", "wasmllm.wasm", "wasm_exec.js",
		"models/index.json", "models/stories260K/manifest.json", "models/stories260K/tokenizer.gguf", "models/stories260K/LICENSE"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	for _, f := range []string{".hidden.js", "models/not-a-model"} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("%s was copied", f)
		}
	}
	if !bytes.Equal(read(t, filepath.Join(out, "wasmllm.wasm")), read(t, o.Wasm)) {
		t.Error("wasmllm.wasm differs from -wasm")
	}

	// Siblings: for pages, scripts, JSON and the wasm, never for shards,
	// tokenizer binaries, or files gzip does not shrink.
	m, err := manifest.Read(filepath.Join(o.Models, "stories260K"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"index.html", "app.js", "img/logo.svg", "wasmllm.wasm", "wasm_exec.js", "models/index.json", "models/stories260K/manifest.json", "models/stories260K/README.md"} {
		p := filepath.Join(out, f)
		if got := gunzip(t, p+".gz"); !bytes.Equal(got, read(t, p)) {
			t.Errorf("%s.gz does not decompress to %s", f, f)
		}
		fi, _ := os.Stat(p)
		gi, _ := os.Stat(p + ".gz")
		if !gi.ModTime().Equal(fi.ModTime()) {
			t.Errorf("%s.gz modified %v, the file %v", f, gi.ModTime(), fi.ModTime())
		}
	}
	for _, f := range []string{"tiny.css", "models/stories260K/" + m.Shards[0].File, "models/stories260K/tokenizer.gguf", "models/stories260K/LICENSE"} {
		if _, err := os.Stat(filepath.Join(out, f+".gz")); err == nil {
			t.Errorf("%s.gz was written", f)
		}
	}
	if !bytes.Equal(read(t, filepath.Join(out, "models/stories260K", m.Shards[0].File)), read(t, filepath.Join(o.Models, "stories260K", m.Shards[0].File))) {
		t.Error("the shard was not copied byte for byte")
	}

	// The listing: the server's fields, URLs relative to the listing.
	var index struct {
		Models []map[string]any `json:"models"`
	}
	if err := json.Unmarshal(read(t, filepath.Join(out, "models/index.json")), &index); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "stories260K", "url": "stories260K/", "manifest": "stories260K/manifest.json", "format_version": 1.0,
		"arch": "llama", "quant": "keep", "bytes": float64(m.TotalBytes()), "shards": 1.0, "tensors": float64(len(m.Tensors))}
	if len(index.Models) != 1 || !mapsEqual(index.Models[0], want) {
		t.Errorf("index.json %v, want one entry %v", index.Models, want)
	}

	wasmSize := int64(len(read(t, o.Wasm)))
	if r.WasmRaw != wasmSize || r.WasmGzip != int64(len(read(t, filepath.Join(out, "wasmllm.wasm.gz")))) || r.WasmGzip >= r.WasmRaw {
		t.Errorf("report: wasm %d raw, %d gzip; the file is %d", r.WasmRaw, r.WasmGzip, wasmSize)
	}
	if len(r.Models) != 1 || r.Models[0].Name != "stories260K" || r.Siblings != 8 {
		t.Errorf("report %+v", r)
	}
	text := r.String()
	if !strings.Contains(text, "wasmllm.wasm") || !strings.Contains(text, " raw, ") || !strings.Contains(text, " gzip") || !strings.Contains(text, "model stories260K") {
		t.Errorf("report text %q", text)
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary folder %s left behind", e.Name())
		}
	}
}

func mapsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestBuildReplacesOnlyItsOwnFolder(t *testing.T) {
	o := inputs(t)
	write(t, filepath.Join(o.Out, "precious.txt"), "not ours")
	_, err := Build(o)
	var oe *OutputError
	if !errors.As(err, &oe) {
		t.Fatalf("into a foreign folder: %v, want an *OutputError", err)
	}
	if _, err := os.Stat(filepath.Join(o.Out, "precious.txt")); err != nil {
		t.Fatal("the foreign folder was touched")
	}
	os.RemoveAll(o.Out)
	if _, err := Build(o); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(o.Out, "stale.js"), "old build")
	if _, err := Build(o); err != nil {
		t.Fatalf("replacing an earlier dist: %v", err)
	}
	if _, err := os.Stat(filepath.Join(o.Out, "stale.js")); err == nil {
		t.Error("a file of the earlier dist survived")
	}
}

func TestBuildRefusesOutputInInput(t *testing.T) {
	o := inputs(t)
	for _, out := range []string{filepath.Join(o.Web, "dist"), o.Web, filepath.Join(o.Models, "x"), filepath.Dir(o.Web)} {
		o.Out = out
		var oe *OutputError
		if _, err := Build(o); !errors.As(err, &oe) {
			t.Errorf("-o %s: %v, want an *OutputError", out, err)
		}
	}
}

func TestBuildBadModels(t *testing.T) {
	cases := map[string]func(t *testing.T, dir string, m *manifest.Manifest){
		"corrupt shard": func(t *testing.T, dir string, m *manifest.Manifest) {
			p := filepath.Join(dir, m.Shards[0].File)
			b := read(t, p)
			b[1000] ^= 1
			write(t, p, string(b))
		},
		"short shard": func(t *testing.T, dir string, m *manifest.Manifest) {
			p := filepath.Join(dir, m.Shards[0].File)
			write(t, p, string(read(t, p)[:100]))
		},
		"long shard": func(t *testing.T, dir string, m *manifest.Manifest) {
			p := filepath.Join(dir, m.Shards[0].File)
			write(t, p, string(read(t, p))+"x")
		},
		"missing shard": func(t *testing.T, dir string, m *manifest.Manifest) {
			os.Remove(filepath.Join(dir, m.Shards[0].File))
		},
		"missing tokenizer": func(t *testing.T, dir string, m *manifest.Manifest) {
			os.Remove(filepath.Join(dir, "tokenizer.gguf"))
		},
		"bad manifest": func(t *testing.T, dir string, m *manifest.Manifest) {
			write(t, filepath.Join(dir, "manifest.json"), `{"format_version": 1, "shards": [}`)
		},
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			o := inputs(t)
			// An earlier good dist must survive a failed run.
			if _, err := Build(o); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(o.Models, "stories260K")
			m, err := manifest.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			breakIt(t, dir, m)
			_, err = Build(o)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), "stories260K") {
				t.Errorf("error %q does not name the model", err)
			}
			var se *ShardError
			if strings.Contains(name, "shard") && name != "missing shard" && (!errors.As(err, &se) || !errors.Is(err, manifest.ErrChecksum)) {
				t.Errorf("error %v: want a *ShardError wrapping ErrChecksum", err)
			}
			t.Log(err)
			if _, err := os.Stat(filepath.Join(o.Out, "models", "stories260K", "manifest.json")); err != nil {
				t.Errorf("the earlier dist was damaged: %v", err)
			}
		})
	}
}

func TestRun(t *testing.T) {
	o := inputs(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"-o", o.Out, "-web", o.Web, "-wasm", o.Wasm, "-wasm-exec", o.WasmExec, "-models", o.Models, "-brotli", ""}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "dist: wasmllm.wasm ") || !strings.Contains(stdout.String(), "no brotli binary") {
		t.Errorf("output %q", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"-o", o.Web, "-web", o.Web, "-wasm", o.Wasm, "-wasm-exec", o.WasmExec}, &stdout, &stderr); code != 2 {
		t.Errorf("-o into -web: exit %d, want 2", code)
	}
	if code := run([]string{"extra"}, &stdout, &stderr); code != 2 {
		t.Errorf("an extra argument: exit %d, want 2", code)
	}
	if code := run([]string{"-o", t.TempDir() + "/d", "-web", o.Web, "-wasm", filepath.Join(t.TempDir(), "none.wasm"), "-wasm-exec", o.WasmExec}, &stdout, &stderr); code != 1 {
		t.Errorf("a missing wasm: exit %d, want 1", code)
	}
}

func TestWasmExecFromGOROOT(t *testing.T) {
	p, err := WasmExecFromGOROOT()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(read(t, p), []byte("Go = class")) {
		t.Errorf("%s does not look like wasm_exec.js", p)
	}
}

func TestBrotli(t *testing.T) {
	bin, err := exec.LookPath("brotli")
	testkit.Need(t, err == nil, "no brotli binary on PATH (Debian's brotli package)")
	o := inputs(t)
	o.Brotli = bin
	r, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.WasmBrotli == 0 || r.WasmBrotli >= r.WasmRaw {
		t.Errorf("wasm brotli %d of %d", r.WasmBrotli, r.WasmRaw)
	}
	var brs []string
	filepath.WalkDir(o.Out, func(p string, d os.DirEntry, err error) error {
		if strings.HasSuffix(p, ".br") {
			brs = append(brs, strings.TrimPrefix(p, o.Out+"/"))
		}
		return nil
	})
	if !slices.Contains(brs, "wasmllm.wasm.br") || slices.ContainsFunc(brs, func(s string) bool { return strings.HasSuffix(s, ".bin.br") }) {
		t.Errorf(".br files %v", brs)
	}
}

// TestBuildDocs: with -docs, dist writes the docs under docs/, their
// search index (each passage embedded with -docs-model), the model, and a
// page whose <wasmllm-search> loads both; the index reads back verified,
// covers every page, and a passage's own text, embedded natively, ranks
// that passage first.
func TestBuildDocs(t *testing.T) {
	o := inputs(t)
	o.Models = ""
	o.Docs = []string{repoFile("README.md"), repoFile("ARCHITECTURE.md")}
	o.DocsModel = repoFile("testdata/embed/models/tiny-bert-cls-q4_0.gguf")
	r, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Docs == nil || r.Docs.Pages != 2 || r.Docs.Passages < 20 || !strings.Contains(r.String(), "docs search docs/") {
		t.Fatalf("docs report %+v\n%s", r.Docs, r)
	}
	dir := filepath.Join(o.Out, "docs")
	page := string(read(t, filepath.Join(dir, "index.html")))
	for _, want := range []string{`src="../wasmllm-search.js"`, `index="search-index/"`, `model="tiny-bert-cls-q4_0.gguf"`} {
		if !strings.Contains(page, want) {
			t.Errorf("docs/index.html lacks %s", want)
		}
	}
	for _, f := range []string{"README.md", "ARCHITECTURE.md", "tiny-bert-cls-q4_0.gguf"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	x, err := search.Read(filepath.Join(dir, "search-index"))
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]bool{}
	for _, e := range x.Entries {
		pages[e.Page] = true
	}
	if x.Manifest.Count != r.Docs.Passages || !pages["README.md"] || !pages["ARCHITECTURE.md"] {
		t.Fatalf("index: %d passages, pages %v", x.Manifest.Count, pages)
	}
	all, err := search.Collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ps []search.Passage // the docs' passages, in the index's order (not the search page's)
	for _, p := range all {
		if strings.HasSuffix(p.Page, ".md") {
			ps = append(ps, p)
		}
	}
	if len(ps) != x.Manifest.Count {
		t.Fatalf("%d passages in the docs, %d indexed", len(ps), x.Manifest.Count)
	}
	m, err := embed.Open(o.DocsModel, cpu.New(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{0, len(ps) / 2, len(ps) - 1} {
		res, err := m.Embed([]embed.Input{embed.Text(ps[k].Input())}, embed.Options{Truncate: true})
		if err != nil {
			t.Fatal(err)
		}
		hits := x.Rank(res[0].Normalized, 1)
		if len(hits) != 1 || hits[0].Score < 0.999 || ps[hits[0].Index].Input() != ps[k].Input() {
			t.Errorf("passage %d (%s #%s): top hit %+v", k, ps[k].Page, ps[k].Anchor, hits)
		}
	}
}
