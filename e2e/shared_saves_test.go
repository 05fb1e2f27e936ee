package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/synth"
)

// TestSharedEngineSaves measures what createEngine({shared: true}) saves a
// second tab, in Chromium and in Firefox in one run (the README's figures):
// a Llama-3.2-1B-shaped q4 model cut to one layer (random weights, about
// 175 MiB of shards), loaded in a first tab from the network; then the time
// until a second tab's engine is ready and the shard bytes it reads: joining
// the shared engine, against a tab of its own reading the shards from Cache
// Storage and one downloading them (cache: false). A per-tab engine also
// holds a second copy of the weights (info.plan.weight_bytes).
func TestSharedEngineSaves(t *testing.T) {
	skipShort(t)
	models := t.TempDir()
	shape := synth.Llama32_1B
	shape.Layers = 1
	gguf := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(gguf, browsertest.RepoFile("testdata/models/tiny-llama3-q4_0.gguf"), shape); err != nil {
		t.Fatal(err)
	}
	m := browsertest.Convert(t, gguf, filepath.Join(models, "llama-1b-1l"), browsertest.ConvertOptions{Quant: "keep"})
	os.Remove(gguf)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	shardBytes := func() int64 {
		var n int64
		for _, s := range m.Shards {
			n += s.Bytes * int64(len(srv.Requests("/models/llama-1b-1l/"+s.File)))
		}
		return n
	}
	type load struct {
		loaded
		Cached int64 `json:"cached"`
		Weight int64 `json:"weight"`
	}
	const model = `model: "/models/llama-1b-1l/", backend: "webgpu"`
	for _, br := range []struct {
		name string
		new  func(testing.TB) *browsertest.Browser
	}{
		{"chromium", func(t testing.TB) *browsertest.Browser { return browsertest.NewBrowser(t) }},
		{"firefox", func(t testing.TB) *browsertest.Browser { return browsertest.NewFirefox(t) }},
	} {
		t.Run(br.name, func(t *testing.T) {
			home := br.new(t)
			home.Timeout *= 3
			home.Open(srv.URL + "/test.html")
			measure := func(tab *browsertest.Browser, opts string) (load, int64) {
				t.Helper()
				before := shardBytes()
				var l load
				if err := tab.Run(`(async () => { const t0 = performance.now(); const e = await wasmllm.createEngine({`+opts+`});
					window.engines = [...(window.engines || []), e];
					return {backend: e.info.backend, shared: e.info.shared, ms: performance.now() - t0, network: e.info.load.network_bytes,
						cached: e.info.load.cached_bytes, weight: e.info.plan.weight_bytes}; })()`, &l); err != nil {
					t.Fatalf("createEngine({%s}): %v", opts, err)
				}
				if l.Backend != "webgpu" {
					t.Fatalf("createEngine({%s}): backend %s", opts, l.Backend)
				}
				return l, shardBytes() - before
			}
			t1, t2, t3 := openTab(t, home, srv.URL), openTab(t, home, srv.URL), openTab(t, home, srv.URL)
			first, firstBytes := measure(t1, model+`, shared: true`)
			joined, joinedBytes := measure(t2, model+`, shared: true`)
			cached, cachedBytes := measure(t3, model)
			t3.MustRun(`engines.pop().unload()`, nil)
			fetched, fetchedBytes := measure(t3, model+`, cache: false`)
			if !joined.Shared.Reused || joinedBytes != 0 || firstBytes == 0 || cachedBytes != 0 || fetchedBytes != firstBytes {
				t.Errorf("shard bytes served: first %d, joined %d (reused %v), per-tab from the cache %d, per-tab without it %d",
					firstBytes, joinedBytes, joined.Shared.Reused, cachedBytes, fetchedBytes)
			}
			if joined.MS >= cached.MS || joined.MS >= fetched.MS {
				t.Errorf("the shared second tab was ready in %.0f ms, a tab of its own in %.0f ms (cache) and %.0f ms (network)", joined.MS, cached.MS, fetched.MS)
			}
			t.Logf("%s, %s of shards (%s of weights on the GPU): first tab %.0f ms (%s downloaded); a second tab ready in: "+
				"shared %.0f ms, 0 bytes read, no second copy; its own engine from Cache Storage %.0f ms (%s read), "+
				"downloading %.0f ms (%s downloaded), each a second copy of the weights",
				br.name, mib(m.TotalBytes()), mib(first.Weight), first.MS, mib(firstBytes), joined.MS, cached.MS, mib(cached.Cached),
				fetched.MS, mib(fetchedBytes))
		})
	}
}
