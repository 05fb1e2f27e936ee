package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/golden"
	"wasmllm/internal/testkit/testserver"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
)

// ggufInfo is engine.info.gguf.
type ggufInfo struct {
	Folder    string  `json:"folder"`
	Name      string  `json:"name"`
	URL       string  `json:"url"`
	Bytes     int64   `json:"bytes"`
	ETag      string  `json:"etag"`
	Converted bool    `json:"converted"`
	ConvertMS float64 `json:"convert_ms"`
	Lossless  bool    `json:"lossless"`
	Offline   bool    `json:"offline"`
	Parts     int     `json:"parts"`
}

// ggufLoad is what the page reports of one GGUF load and its golden run.
type ggufLoad struct {
	Run      goldenRun
	GGUF     ggufInfo
	Manifest string // the conversion's manifest.json, from Cache Storage
	Progress []struct {
		Stage string `json:"stage"`
		Bytes int64  `json:"bytes"`
		Total int64  `json:"total"`
	}
	Network int64 // info.load.network_bytes
}

// hubServers start a CDN (another origin, CORS, ETags, Range) serving dir
// under /cdn/, and a hub whose /resolve/main/ links redirect there, as the
// Hugging Face hub's do.
func hubServers(t *testing.T, dir string) (hub, cdn *testserver.Server) {
	t.Helper()
	cdn, err := testserver.Start(testserver.Options{Hub: true, Mounts: []testserver.Mount{{Prefix: "/cdn/", Path: dir}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cdn.Close)
	hub, err = testserver.Start(testserver.Options{Hub: true, Redirect: map[string]string{"/resolve/main/": cdn.URL + "/cdn/"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Close)
	return hub, cdn
}

// TestGGUFFromHub loads exact goldens' GGUFs straight from a server
// that behaves as the Hugging Face hub (a resolve/main link redirecting to
// a CDN on another origin, Range requests, ETags), with no converter: the
// worker reads it with Range requests and converts it tensor by tensor
// into Cache Storage. The golden's greedy ids and logprobs come out, the
// conversion is lossless and equals cmd/convert's (manifest, shard hashes
// and all), progress covers the GGUF's bytes, a second load reads only one
// byte of the GGUF, and with the servers gone a third load runs from the
// cache. A GGUF split in three parts loads from any part's link and
// from its parts as Files (a missing part is a bad_request), a File
// (as from a file picker) loads the same way, and so does the chat page's
// ?model=URL (after the user's Load: it is another origin) and a file
// dropped on it; a truncated GGUF fails with
// bad_model naming the file, a missing one with network, and one too
// large for the engine before anything is read or stored.
//
// The GGUFs loaded from the hub one by one are hubGoldens: every
// architecture and every weight type at least once. The other goldens'
// models are the same conversion code (package convert, natively checked
// against cmd/convert on every test model) and the same CPU engine (every
// golden in both browsers in the gpu suite, natively in model).
func TestGGUFFromHub(t *testing.T) {
	skipShort(t)
	ggufFromHub(t, func(t testing.TB) *browsertest.Browser { return browsertest.NewBrowser(t) })
}

// TestFirefoxGGUFFromHub is TestGGUFFromHub in Firefox.
func TestFirefoxGGUFFromHub(t *testing.T) {
	skipShort(t)
	ggufFromHub(t, browsertest.NewFirefox)
}

// hubGoldens are the models ggufFromHub loads from the hub one by one:
// Llama (stories260K, the offline load's; Llama-3 q8_0), Qwen3 f32,
// Qwen3-MoE q4_0 (the split GGUF's model) and Qwen2 q8_0 (q/k/v biases).
var hubGoldens = map[string]bool{"stories260K": true, "tiny-llama3-q8_0": true, "tiny-qwen3-f32": true,
	"tiny-qwen3moe-q4_0": true, "tiny-qwen2-q8_0": true}

func ggufFromHub(t *testing.T, newBrowser func(testing.TB) *browsertest.Browser) {
	files := golden.Files(t, browsertest.RepoFile("testdata/golden"), "exact", false, false)
	files = append(files, golden.Files(t, browsertest.RepoFile("testdata/qwen2/golden"), "exact", false, false)...)
	if len(files) < 12 {
		t.Fatalf("%d exact goldens, want at least 12", len(files))
	}
	// The GGUFs as the hub serves them, a truncated one besides, and each
	// one's cmd/convert folder (the reference and its tokenizer).
	ggufs, models := t.TempDir(), t.TempDir()
	for _, g := range files {
		data, err := os.ReadFile(g.ModelPath())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(g.ModelPath(), ".gguf") {
			continue
		}
		if err := os.WriteFile(filepath.Join(ggufs, filepath.Base(g.ModelPath())), data, 0o644); err != nil {
			t.Fatal(err)
		}
		browsertest.Convert(t, g.ModelPath(), filepath.Join(models, modelName(g)), browsertest.ConvertOptions{Quant: "keep"})
		if strings.Contains(g.ModelPath(), "tiny-llama3-q8_0") {
			if err := os.WriteFile(filepath.Join(ggufs, "broken.gguf"), data[:len(data)*2/3], 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	stories := files[0]
	for _, f := range files {
		if strings.Contains(f.ModelPath(), "stories260K") {
			stories = f
		}
	}
	// One model split in three parts, as llama.cpp's gguf-split writes it.
	var split *golden.File
	for _, g := range files {
		if strings.Contains(g.ModelPath(), "tiny-qwen3moe-q4_0") {
			split = g
		}
	}
	whole, err := loader.ReadGGUF(split.ModelPath())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loader.WriteGGUFSplit(ggufs, modelName(split), whole, 3); err != nil {
		t.Fatal(err)
	}
	hub, cdn := hubServers(t, ggufs)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{})
	b := newBrowser(t)
	b.Open(srv.URL + "/test.html")
	b.MustRun(pageHelpers, nil)

	// load runs createEngine on model (a JavaScript expression) and the
	// golden's request.
	load := func(t *testing.T, model string, g *golden.File) ggufLoad {
		t.Helper()
		var got ggufLoad
		b.MustRun(`(async () => {
			if (window.engine) await engine.unload();
			const progress = [];
			window.engine = await wasmllm.createEngine({model: `+model+`, backend: "cpu", cpuRanks: 1,
				onProgress: (p) => progress.push({stage: p.stage || "", bytes: p.bytes, total: p.total})});
			const r = await engine.completions.create({prompt: `+jsonIDs(g.Tokens)+`, max_tokens: `+fmt.Sprint(len(g.Greedy))+`,
				temperature: 0, ignore_eos: true, logprobs: 1});
			const c = r.choices[0];
			const info = engine.info;
			const cache = await caches.open(wasmllm.cacheNameFor(`+model+`));
			const hit = await cache.match(info.gguf.folder + "manifest.json");
			return {Run: {Backend: info.backend, Text: c.text, Logprobs: c.logprobs.token_logprobs, Tokens: r.usage.completion_tokens, Finish: c.finish_reason},
				GGUF: info.gguf, Manifest: hit ? await hit.text() : "", Progress: progress, Network: info.load.network_bytes};
		})()`, &got)
		checkGoldenRun(t, g, models, "cpu", "", got.Run)
		return got
	}
	urlOf := func(g *golden.File) string {
		return hub.URL + "/resolve/main/" + filepath.Base(g.ModelPath())
	}
	loaded := 0
	for _, g := range files {
		if !strings.HasSuffix(g.ModelPath(), ".gguf") || !hubGoldens[modelName(g)] {
			continue
		}
		loaded++
		name := modelName(g)
		t.Run(name, func(t *testing.T) {
			src, err := os.Stat(g.ModelPath())
			if err != nil {
				t.Fatal(err)
			}
			first := load(t, fmt.Sprintf("%q", urlOf(g)), g)
			gi := first.GGUF
			if !gi.Converted || !gi.Lossless || gi.Bytes != src.Size() || gi.ETag == "" || gi.Name != filepath.Base(g.ModelPath()) {
				t.Errorf("info.gguf %+v: want a lossless conversion of the %d-byte GGUF with its ETag", gi, src.Size())
			}
			if first.Network != 0 {
				t.Errorf("%d shard bytes from the network: the conversion's folder is local", first.Network)
			}
			checkGGUFProgress(t, first, src.Size())
			// The conversion is cmd/convert's, byte for byte.
			got, err := manifest.Parse([]byte(first.Manifest))
			if err != nil {
				t.Fatalf("the conversion's manifest: %v", err)
			}
			want, err := manifest.Read(filepath.Join(models, name))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Shards, want.Shards) || !reflect.DeepEqual(got.Tensors, want.Tensors) || got.Name != want.Name {
				gj, _ := json.Marshal(got.Shards)
				wj, _ := json.Marshal(want.Shards)
				t.Errorf("the browser's conversion differs from cmd/convert's:\nshards %s\nwant   %s", gj, wj)
			}
			// A second load finds the conversion: one Range request for the
			// GGUF's size and ETag, nothing more.
			before := len(cdn.Requests("/cdn/"))
			second := load(t, fmt.Sprintf("%q", urlOf(g)), g)
			reqs := cdn.Requests("/cdn/")[before:]
			if second.GGUF.Converted || second.Run.Text != first.Run.Text || len(reqs) != 1 || reqs[0].Range != "bytes=0-0" {
				t.Errorf("second load: converted %v, %d requests %v; want the kept conversion after one probe", second.GGUF.Converted, len(reqs), reqs)
			}
		})
	}
	if loaded != len(hubGoldens) {
		t.Fatalf("%d of the %d hubGoldens are exact goldens' GGUFs", loaded, len(hubGoldens))
	}

	// A GGUF that changes on the server (another model under the same
	// name: a new ETag) is converted again, and the old conversion's
	// files are dropped.
	t.Run("changed", func(t *testing.T) {
		var other *golden.File
		for _, f := range files {
			if strings.Contains(f.ModelPath(), "tiny-qwen3-q4_0") {
				other = f
			}
		}
		url := fmt.Sprintf("%q", hub.URL+"/resolve/main/changing.gguf")
		for i, g := range []*golden.File{stories, other} {
			data, err := os.ReadFile(g.ModelPath())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ggufs, "changing.gguf"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			later := time.Now().Add(time.Duration(i) * time.Hour) // a new ETag even within the same second
			if err := os.Chtimes(filepath.Join(ggufs, "changing.gguf"), later, later); err != nil {
				t.Fatal(err)
			}
			got := load(t, url, g)
			if !got.GGUF.Converted {
				t.Errorf("%s: info.gguf %+v: not converted", filepath.Base(g.ModelPath()), got.GGUF)
			}
			m, err := manifest.Parse([]byte(got.Manifest))
			if err != nil {
				t.Fatal(err)
			}
			spec, err := model.ParseTokenizerSpec("manifest.json", m.Tokenizer)
			if err != nil {
				t.Fatal(err)
			}
			var keys int
			b.MustRun(`caches.open(wasmllm.cacheNameFor(`+url+`)).then((c) => c.keys()).then((k) => k.length)`, &keys)
			// The shards, the tokenizer's files, manifest.json and gguf-source.json.
			if want := len(m.Shards) + len(spec.Names()) + 2; keys != want {
				t.Errorf("%s: %d files cached for the conversion, want %d", filepath.Base(g.ModelPath()), keys, want)
			}
		}
	})

	t.Run("split", func(t *testing.T) {
		got := load(t, fmt.Sprintf("%q", hub.URL+"/resolve/main/"+modelName(split)+"-00002-of-00003.gguf"), split)
		if !got.GGUF.Converted || !got.GGUF.Lossless || got.GGUF.Parts != 3 {
			t.Errorf("info.gguf %+v: want a lossless conversion of three parts", got.GGUF)
		}
		m, err := manifest.Parse([]byte(got.Manifest))
		if err != nil {
			t.Fatal(err)
		}
		want, err := manifest.Read(filepath.Join(models, modelName(split)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m.Shards, want.Shards) || !reflect.DeepEqual(m.Tensors, want.Tensors) || m.Name != want.Name {
			t.Errorf("the split's conversion differs from cmd/convert's of the whole file (name %q, want %q)", m.Name, want.Name)
		}
	})

	t.Run("file", func(t *testing.T) {
		g := files[0]
		for _, f := range files {
			if strings.Contains(f.ModelPath(), "tiny-qwen3-q4_0") {
				g = f
			}
		}
		b.MustRun(`(async () => {
			const bytes = await (await fetch(`+fmt.Sprintf("%q", cdn.URL+"/cdn/"+filepath.Base(g.ModelPath()))+`)).arrayBuffer();
			window.ggufFile = new File([bytes], `+fmt.Sprintf("%q", filepath.Base(g.ModelPath()))+`, {lastModified: 1700000000000});
			return true;
		})()`, nil)
		before := len(cdn.Requests("/cdn/"))
		got := load(t, "ggufFile", g)
		if !got.GGUF.Converted || !got.GGUF.Lossless || got.GGUF.URL != "" || !strings.Contains(got.GGUF.Folder, "/__wasmllm/file/") {
			t.Errorf("info.gguf %+v: want a File's lossless conversion", got.GGUF)
		}
		if n := len(cdn.Requests("/cdn/")) - before; n != 0 {
			t.Errorf("%d requests to the server for a File", n)
		}
		src, _ := os.Stat(g.ModelPath())
		checkGGUFProgress(t, got, src.Size())
	})

	// A split GGUF's parts as Files, in any order.
	t.Run("split-files", func(t *testing.T) {
		base := cdn.URL + "/cdn/" + modelName(split)
		b.MustRun(`(async () => {
			const file = async (i) => new File([await (await fetch(`+fmt.Sprintf("%q", base)+` + "-0000" + i + "-of-00003.gguf")).arrayBuffer()],
				`+fmt.Sprintf("%q", modelName(split))+` + "-0000" + i + "-of-00003.gguf", {lastModified: 1700000000000});
			window.splitFiles = [await file(3), await file(1), await file(2)];
			return true;
		})()`, nil)
		got := load(t, "splitFiles", split)
		if !got.GGUF.Converted || !got.GGUF.Lossless || got.GGUF.Parts != 3 {
			t.Errorf("info.gguf %+v: want a lossless conversion of three Files", got.GGUF)
		}
		var msg string
		b.MustRun(`codeOf(wasmllm.createEngine({model: splitFiles.slice(0, 2), backend: "cpu", cpuRanks: 1}))`, &msg)
		if !strings.HasPrefix(msg, "bad_request: ") || !strings.Contains(msg, "missing") {
			t.Errorf("two of three parts: %q, want bad_request naming the missing part", msg)
		}
	})

	t.Run("errors", func(t *testing.T) {
		var msg string
		b.MustRun(`codeOf(wasmllm.createEngine({model: `+fmt.Sprintf("%q", hub.URL+"/resolve/main/broken.gguf")+`, backend: "cpu", cpuRanks: 1}))`, &msg)
		if !strings.HasPrefix(msg, "bad_model: ") || !strings.Contains(msg, "broken.gguf") {
			t.Errorf("a truncated GGUF: %q, want bad_model naming broken.gguf", msg)
		}
		b.MustRun(`codeOf(wasmllm.createEngine({model: `+fmt.Sprintf("%q", hub.URL+"/resolve/main/missing.gguf")+`, backend: "cpu", cpuRanks: 1}))`, &msg)
		if !strings.HasPrefix(msg, "network: ") || !strings.Contains(msg, "404") {
			t.Errorf("a missing GGUF: %q, want network naming HTTP 404", msg)
		}
		// Too large for the engine's heap: refused before a tensor is read
		// or anything is stored.
		big := hub.URL + "/resolve/main/tiny-qwen3-f32.gguf" // its kept conversion is dropped first
		b.MustRun(`(async () => {
			await caches.delete(wasmllm.cacheNameFor(`+fmt.Sprintf("%q", big)+`));
			const code = await codeOf(wasmllm.createEngine({model: `+fmt.Sprintf("%q", big)+`, backend: "cpu", cpuRanks: 1, heapBytes: 65536}));
			const cache = await caches.open(wasmllm.cacheNameFor(`+fmt.Sprintf("%q", big)+`));
			return code + " | " + (await cache.keys()).length;
		})()`, &msg)
		if !strings.HasPrefix(msg, "model_too_large: ") || !strings.HasSuffix(msg, " | 0") {
			t.Errorf("a GGUF over the heap: %q, want model_too_large with nothing stored", msg)
		}
		// Over the storage quota: refused before converting.
		b.MustRun(`(async () => {
			const code = await codeOf(wasmllm.createEngine({model: `+fmt.Sprintf("%q", big)+`, backend: "cpu", cpuRanks: 1, storageEstimate: {quota: 4096, usage: 0}}));
			const cache = await caches.open(wasmllm.cacheNameFor(`+fmt.Sprintf("%q", big)+`));
			return code + " | " + (await cache.keys()).length;
		})()`, &msg)
		if !strings.HasPrefix(msg, "quota_exceeded: ") || !strings.HasSuffix(msg, " | 0") {
			t.Errorf("a GGUF over the quota: %q, want quota_exceeded with nothing stored", msg)
		}
	})

	// The chat page: ?model=URL of a GGUF (on another origin: it asks
	// first), then a GGUF file dropped on it.
	t.Run("page", func(t *testing.T) {
		g := stories
		p := newBrowser(t)
		p.Open(srv.URL + "/?backend=cpu&model=" + urlOf(g))
		if err := p.WaitFor(`!document.querySelector("[data-testid=load]").hidden`, time.Minute, nil); err != nil {
			t.Fatalf("the page does not ask before it reads a GGUF of another origin: %v", err)
		}
		// a click from the page itself: this subtest runs in Firefox too,
		// where the CDP helper (Click) does not
		p.MustRun(`(document.querySelector("[data-testid=load]").click(), true)`, nil)
		waitReady(t, p)
		var info ggufInfo
		p.MustRun(`wasmllmApp.info.gguf`, &info)
		if info.Name != filepath.Base(g.ModelPath()) {
			t.Errorf("?model=URL loaded %+v", info)
		}
		p.MustRun(`(async () => {
			const bytes = await (await fetch(`+fmt.Sprintf("%q", cdn.URL+"/cdn/"+filepath.Base(g.ModelPath()))+`)).arrayBuffer();
			const dt = new DataTransfer();
			dt.items.add(new File([bytes], "dropped.gguf"));
			document.dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
			return true;
		})()`, nil)
		if err := p.WaitFor(`wasmllmApp.info && wasmllmApp.info.gguf && wasmllmApp.info.gguf.name === "dropped.gguf"`, 2*time.Minute, nil); err != nil {
			t.Fatalf("the dropped GGUF did not load: %v", err)
		}
		waitReady(t, p)
		var text string
		p.MustRun(`wasmllmApp.engine.completions.create({prompt: "Once upon a time", max_tokens: 8, temperature: 0, ignore_eos: true}).then((r) => r.choices[0].text)`, &text)
		if text == "" {
			t.Errorf("no text from the dropped GGUF")
		}
		// A split GGUF's three parts dropped together.
		base := cdn.URL + "/cdn/" + modelName(split)
		p.MustRun(`(async () => {
			const dt = new DataTransfer();
			for (const i of [2, 1, 3]) {
				const name = `+fmt.Sprintf("%q", modelName(split))+` + "-0000" + i + "-of-00003.gguf";
				dt.items.add(new File([await (await fetch(`+fmt.Sprintf("%q", base)+` + "-0000" + i + "-of-00003.gguf")).arrayBuffer()], name));
			}
			document.dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
			return true;
		})()`, nil)
		if err := p.WaitFor(`wasmllmApp.info && wasmllmApp.info.gguf && wasmllmApp.info.gguf.parts === 3`, 2*time.Minute, nil); err != nil {
			t.Fatalf("the dropped split GGUF did not load: %v", err)
		}
		waitReady(t, p)
	})

	t.Run("offline", func(t *testing.T) {
		hub.Close()
		cdn.Close()
		g := stories
		got := load(t, fmt.Sprintf("%q", urlOf(g)), g)
		if got.GGUF.Converted || !got.GGUF.Offline {
			t.Errorf("info.gguf %+v: want the kept conversion, offline", got.GGUF)
		}
	})
}

// checkGGUFProgress: the load reported the GGUF's bytes (stage "gguf"),
// never decreasing, the last equal to its size.
func checkGGUFProgress(t *testing.T, l ggufLoad, size int64) {
	t.Helper()
	var last int64 = -1
	n := 0
	for _, p := range l.Progress {
		if p.Stage != "gguf" {
			continue
		}
		n++
		if p.Bytes < last || p.Total != size {
			t.Errorf("progress %+v after %d bytes, GGUF of %d", p, last, size)
		}
		last = p.Bytes
	}
	if n == 0 || last != size {
		t.Errorf("%d GGUF progress events, the last at %d of %d bytes", n, last, size)
	}
}
