package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/testserver"
	"wasmllm/loader"
	"wasmllm/manifest"
)

// TestGGUFChangesWhileRead: a GGUF read by URL that changes on the server
// while the worker converts it is never kept as a conversion of two files.
// Bytes that change under the same ETag (same size and time, so the same
// validators) are found by the samples the worker reads again before it
// writes the manifest; an ETag that disappears midway, at the next read.
// Either way the partial conversion is dropped and the conversion starts
// over, once (info.gguf.restarts), and the folder then holds exactly
// cmd/convert's conversion of the new file. A GGUF whose ETag changes at
// every answer fails with "integrity" and leaves no conversion.
func TestGGUFChangesWhileRead(t *testing.T) {
	skipShort(t)
	ggufChangesWhileRead(t, func(t testing.TB) *browsertest.Browser { return browsertest.NewBrowser(t) })
}

// TestFirefoxGGUFChangesWhileRead is TestGGUFChangesWhileRead in Firefox.
func TestFirefoxGGUFChangesWhileRead(t *testing.T) {
	skipShort(t)
	ggufChangesWhileRead(t, browsertest.NewFirefox)
}

func ggufChangesWhileRead(t *testing.T, newBrowser func(testing.TB) *browsertest.Browser) {
	src := browsertest.RepoFile("testdata/models/stories260K.gguf")
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	g, err := loader.ReadGGUF(src)
	if err != nil {
		t.Fatal(err)
	}
	// The same model with every weight negated: a valid GGUF of the same
	// size, whose tensor bytes all differ.
	variant := append([]byte(nil), orig...)
	for _, ti := range g.Tensors {
		if ti.DType != loader.F32 {
			t.Fatalf("%s is %v; the test negates F32 weights", ti.Name, ti.DType)
		}
		for i := ti.Offset + 3; i < ti.Offset+ti.Size; i += 4 {
			variant[i] ^= 0x80
		}
	}
	dir, models := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "variant.gguf"), variant, 0o644); err != nil {
		t.Fatal(err)
	}
	want := browsertest.Convert(t, filepath.Join(dir, "variant.gguf"), filepath.Join(models, "variant"), browsertest.ConvertOptions{Quant: "keep"})
	stamp := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, name := range []string{"same-etag.gguf", "etag-gone.gguf", "restless.gguf"} {
		if err := os.WriteFile(filepath.Join(dir, name), orig, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, name), stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}

	// The CDN's faults, by file: the third tensor read swaps in the
	// variant (same size and time); etag-gone.gguf loses its ETag then;
	// restless.gguf has a new ETag at every answer.
	var mu sync.Mutex
	tensorReads := map[string]int{}
	answers := map[string]int{}
	swapped := map[string]bool{}
	cdn, err := testserver.Start(testserver.Options{Hub: true, Mounts: []testserver.Mount{{Prefix: "/cdn/", Path: dir}},
		Before: func(r *http.Request) {
			name := filepath.Base(r.URL.Path)
			from, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Range"), "bytes="), "-")
			at, err := strconv.ParseInt(from, 10, 64)
			mu.Lock()
			defer mu.Unlock()
			answers[name]++
			if err != nil || at < g.DataOffset || name == "restless.gguf" {
				return
			}
			if tensorReads[name]++; tensorReads[name] == 3 {
				if err := os.WriteFile(filepath.Join(dir, name), variant, 0o644); err != nil {
					t.Error(err)
				}
				if err := os.Chtimes(filepath.Join(dir, name), stamp, stamp); err != nil {
					t.Error(err)
				}
				swapped[name] = true
			}
		},
		ETag: func(r *http.Request, fi os.FileInfo) string {
			name := filepath.Base(r.URL.Path)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case name == "etag-gone.gguf" && swapped[name]:
				return ""
			case name == "restless.gguf":
				return fmt.Sprintf(`"v%d"`, answers[name])
			}
			return fmt.Sprintf(`"%x-%x"`, fi.Size(), fi.ModTime().UnixNano())
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cdn.Close)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{})
	b := newBrowser(t)
	b.Open(srv.URL + "/test.html")
	b.MustRun(pageHelpers, nil)

	type result struct {
		Code     string
		GGUF     map[string]any
		Manifest string
		Kept     []string
	}
	load := func(name string) result {
		url := fmt.Sprintf("%q", cdn.URL+"/cdn/"+name)
		var out result
		b.MustRun(`(async () => {
			if (window.engine) { await engine.unload(); window.engine = null; }
			const out = {};
			try {
				window.engine = await wasmllm.createEngine({model: `+url+`, backend: "cpu", cpuRanks: 1});
				out.Code = "ok";
				out.GGUF = engine.info.gguf;
			} catch (err) {
				out.Code = err.code + ": " + err.message;
			}
			const cache = await caches.open(wasmllm.cacheNameFor(`+url+`));
			out.Kept = (await cache.keys()).map((r) => r.url);
			const m = out.Kept.find((u) => u.endsWith("/manifest.json"));
			out.Manifest = m ? await (await cache.match(m)).text() : "";
			return out;
		})()`, &out)
		return out
	}

	for _, name := range []string{"same-etag.gguf", "etag-gone.gguf"} {
		t.Run(strings.TrimSuffix(name, ".gguf"), func(t *testing.T) {
			got := load(name)
			if got.Code != "ok" {
				t.Fatalf("load: %s", got.Code)
			}
			if !swapped[name] || got.GGUF["converted"] != true || got.GGUF["restarts"] != 1.0 {
				t.Errorf("info.gguf %v (swapped %v): want a conversion started over once", got.GGUF, swapped[name])
			}
			if name == "etag-gone.gguf" && got.GGUF["etag"] != "" {
				t.Errorf("info.gguf.etag %v: the file has none now", got.GGUF["etag"])
			}
			m, err := manifest.Parse([]byte(got.Manifest))
			if err != nil {
				t.Fatalf("the kept conversion's manifest: %v", err)
			}
			if !reflect.DeepEqual(m.Shards, want.Shards) || !reflect.DeepEqual(m.Tensors, want.Tensors) {
				gs, _ := json.Marshal(m.Shards)
				ws, _ := json.Marshal(want.Shards)
				t.Errorf("the kept conversion is not cmd/convert's of the file now served:\n%s\nwant %s", gs, ws)
			}
		})
	}
	t.Run("restless", func(t *testing.T) {
		got := load("restless.gguf")
		if !strings.HasPrefix(got.Code, "integrity: ") || !strings.Contains(got.Code, "restless.gguf") {
			t.Errorf("load: %q, want integrity naming the file", got.Code)
		}
		if got.Manifest != "" || len(got.Kept) != 0 {
			t.Errorf("kept after a failed load: %v", got.Kept)
		}
	})
}
