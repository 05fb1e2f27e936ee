//go:build !js

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/manifest"
)

// These tests run the browser engine end to end: a real server on
// 127.0.0.1 (the repository's server binary, or browsertest's
// fault-injecting one), the wasm engine in a Web Worker of headless
// Chromium (WebGPU on SwiftShader), and the JavaScript API of web/.
// Generation is checked on WebGPU and on the CPU backend; loader tests use
// the CPU backend, which loads faster on SwiftShader machines.

// storiesModel converts stories260K into NAME under a fresh models folder,
// in shards of at most 1 MiB (two), and returns the folder and manifest.
func storiesModel(t *testing.T, name string) (string, *manifest.Manifest) {
	t.Helper()
	models := t.TempDir()
	m := browsertest.Convert(t, browsertest.RepoFile("testdata/models/stories260K.gguf"), filepath.Join(models, name),
		browsertest.ConvertOptions{ShardMB: 1})
	if len(m.Shards) < 2 {
		t.Fatalf("want a model of several shards, got %d", len(m.Shards))
	}
	return models, m
}

// generateCLI runs go run ./cmd/generate -json and returns its text.
func generateCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", "./cmd/generate", "-json"}, args...)...)
	cmd.Dir = browsertest.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./cmd/generate %v: %v\n%s", args, err, stderr.Bytes())
	}
	var text strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var tok struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &tok); err != nil {
			t.Fatalf("generate output %q: %v", sc.Text(), err)
		}
		text.WriteString(tok.Text)
	}
	return text.String()
}

func jsValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// loadInfo is the part of engine.info the tests read.
type loadInfo struct {
	Backend string `json:"backend"`
	Notice  string `json:"notice"`
	Adapter *struct {
		Architecture string `json:"architecture"`
		Fallback     bool   `json:"fallback"`
	} `json:"adapter"`
	Context int `json:"context_length"`
	Model   struct {
		Name   string `json:"name"`
		Bytes  int64  `json:"bytes"`
		Shards int    `json:"shards"`
	} `json:"model"`
	Load struct {
		MS                float64            `json:"ms"`
		Phases            map[string]float64 `json:"phases_ms"`
		NetworkBytes      int64              `json:"network_bytes"`
		CachedBytes       int64              `json:"cached_bytes"`
		ManifestFromCache bool               `json:"manifest_from_cache"`
		GPUDirectBytes    int64              `json:"gpu_direct_bytes"`
		Persist           *struct {
			Granted, Asked, Already bool
		} `json:"persist"`
	} `json:"load"`
}

// load creates window.engine with opts (plus onProgress recording into
// window.progress, emptied first).
func load(b *browsertest.Browser, opts map[string]any) (*loadInfo, error) {
	var info loadInfo
	err := b.Run(`(window.progress = [], wasmllm.createEngine({...`+jsValue(opts)+`, onProgress})).then(e => (window.engine = e).info)`, &info)
	if err != nil {
		return nil, err
	}
	return &info, nil
}

func mustLoad(t *testing.T, b *browsertest.Browser, opts map[string]any) *loadInfo {
	t.Helper()
	info, err := load(b, opts)
	if err != nil {
		t.Fatalf("createEngine(%v): %v", opts, err)
	}
	return info
}

type completion struct {
	Object  string `json:"object"`
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
		Message      *struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func complete(t *testing.T, b *browsertest.Browser, req map[string]any) *completion {
	t.Helper()
	var c completion
	b.MustRun(`engine.completions.create(`+jsValue(req)+`)`, &c)
	if len(c.Choices) != 1 {
		t.Fatalf("response %+v", c)
	}
	return &c
}

type progressEvent struct {
	Bytes       int64   `json:"bytes"`
	Total       int64   `json:"total"`
	ShardsDone  int     `json:"shards_done"`
	ShardsTotal int     `json:"shards_total"`
	Rate        float64 `json:"rate"`
	T           float64 `json:"t"` // arrival time in the page, ms
}

// checkProgress checks that the recorded progress events are monotonic and
// end at exactly the model's total, and returns them.
func checkProgress(t *testing.T, b *browsertest.Browser, m *manifest.Manifest) []progressEvent {
	t.Helper()
	var ev []progressEvent
	b.MustRun(`window.progress`, &ev)
	if len(ev) == 0 {
		t.Fatal("no progress events")
	}
	for i, e := range ev {
		if e.Total != m.TotalBytes() || e.ShardsTotal != len(m.Shards) || e.Bytes < 0 || e.Bytes > e.Total {
			t.Errorf("event %d: %+v (total %d, %d shards)", i, e, m.TotalBytes(), len(m.Shards))
		}
		if i > 0 && (e.Bytes < ev[i-1].Bytes || e.ShardsDone < ev[i-1].ShardsDone) {
			t.Errorf("event %d goes back: %+v after %+v", i, e, ev[i-1])
		}
	}
	if last := ev[len(ev)-1]; last.Bytes != m.TotalBytes() || last.ShardsDone != len(m.Shards) {
		t.Errorf("last event %+v, want bytes %d and %d shards done", last, m.TotalBytes(), len(m.Shards))
	}
	return ev
}

// cachedURLs returns the URLs in the model's Cache Storage cache, or nil
// when there is no such cache.
func cachedURLs(t *testing.T, b *browsertest.Browser, model string) []string {
	t.Helper()
	var urls []string
	b.MustRun(`(async (name) => (await caches.has(name)) ? (await (await caches.open(name)).keys()).map(r => new URL(r.url).pathname) : null)(wasmllm.cacheNameFor(`+jsValue(model)+`))`, &urls)
	return urls
}

func wantCode(t *testing.T, err error, code string) *browsertest.JSError {
	t.Helper()
	var je *browsertest.JSError
	if !errors.As(err, &je) || je.Code != code {
		t.Fatalf("error %v, want code %q", err, code)
	}
	return je
}

// TestLoadGenerate loads the bundled model on WebGPU and generates what
// cmd/generate does for the same model, prompt and settings; then the
// same on the CPU backend.
func TestLoadGenerate(t *testing.T) {
	t.Parallel()
	models := browsertest.RepoFile("models")
	m, err := manifest.Read(filepath.Join(models, "stories260K"))
	if err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	info := mustLoad(t, b, map[string]any{"model": "/models/stories260K/", "backend": "webgpu"})
	if info.Backend != "webgpu" || info.Adapter == nil || info.Model.Name != "stories260K" || info.Context != m.Config.MaxContext {
		t.Errorf("info %+v", info)
	}
	if info.Load.NetworkBytes != m.TotalBytes() || info.Load.CachedBytes != 0 || info.Load.ManifestFromCache {
		t.Errorf("first load: %+v", info.Load)
	}
	// The large weights went from the shard's JavaScript bytes to the GPU.
	var tensorBytes int64
	for _, ti := range m.Tensors {
		tensorBytes += ti.Bytes
	}
	if info.Load.GPUDirectBytes != tensorBytes {
		t.Errorf("%d of %d tensor bytes went straight to the GPU", info.Load.GPUDirectBytes, tensorBytes)
	}
	t.Logf("WebGPU load: %.0f ms %v; %d of %d bytes straight from JavaScript to the GPU", info.Load.MS, info.Load.Phases, info.Load.GPUDirectBytes, m.TotalBytes())
	checkProgress(t, b, m)

	const n = 24
	want := generateCLI(t, "-model", "models/stories260K", "-prompt", "Once upon a time", "-n", fmt.Sprint(n),
		"-temperature", "0.8", "-top-k", "40", "-seed", "7")
	req := map[string]any{"prompt": "Once upon a time", "max_tokens": n, "temperature": 0.8, "top_k": 40, "seed": 7}
	got := complete(t, b, req)
	if got.Choices[0].Text != want {
		t.Errorf("WebGPU: %q\ngenerate: %q", got.Choices[0].Text, want)
	}
	if got.Object != "text_completion" || got.Choices[0].FinishReason != "length" || got.Usage.PromptTokens != 5 ||
		got.Usage.CompletionTokens != n || got.Usage.TotalTokens != 5+n {
		t.Errorf("response %+v", got)
	}
	var stats map[string]float64
	b.MustRun(`engine.stats`, &stats)
	if stats["decode_tokens"] != n || stats["decode_tokens_per_s"] <= 0 || stats["decode_steps_ahead"] != 0 {
		t.Errorf("stats %v (a sampled request is not pipelined)", stats)
	}
	t.Logf("WebGPU (%s): prefill %.1f tok/s, decode %.1f tok/s", info.Adapter.Architecture, stats["prefill_tokens_per_s"], stats["decode_tokens_per_s"])
	// Greedy: every decode step is submitted before the previous token is
	// read back, and the text is the CPU's.
	greedy := generateCLI(t, "-model", "models/stories260K", "-prompt", "Once upon a time", "-n", fmt.Sprint(n), "-temperature", "0")
	if got := complete(t, b, map[string]any{"prompt": "Once upon a time", "max_tokens": n, "temperature": 0}); got.Choices[0].Text != greedy {
		t.Errorf("WebGPU greedy: %q\ngenerate: %q", got.Choices[0].Text, greedy)
	}
	b.MustRun(`engine.stats`, &stats)
	if stats["decode_steps_ahead"] != n-1 {
		t.Errorf("greedy: %v decode steps ahead of their readback, want %d", stats["decode_steps_ahead"], n-1)
	}
	b.MustRun(`engine.unload()`, nil)

	// The CPU backend, from the cache this time.
	info = mustLoad(t, b, map[string]any{"model": "/models/stories260K/", "backend": "cpu"})
	if info.Backend != "cpu" || info.Load.NetworkBytes != 0 || info.Load.CachedBytes != m.TotalBytes() {
		t.Errorf("CPU info %+v", info)
	}
	if got := complete(t, b, req); got.Choices[0].Text != want {
		t.Errorf("CPU: %q\ngenerate: %q", got.Choices[0].Text, want)
	}
	b.MustRun(`engine.stats`, &stats)
	t.Logf("CPU in wasm: prefill %.1f tok/s, decode %.1f tok/s", stats["prefill_tokens_per_s"], stats["decode_tokens_per_s"])
}

// TestOffline: after one load, the model loads from Cache Storage and
// generates the same tokens with the server stopped, in the same page and
// after a reload.
func TestOffline(t *testing.T) {
	t.Parallel()
	models, m := storiesModel(t, "stories")
	web := browsertest.WebDir(t, nil)
	// Pages and the wasm stay fresh in the HTTP cache for the whole test
	// (the default max-age is a minute).
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Web: web, Models: models, Args: []string{"-max-age", "10m"}})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	opts := map[string]any{"model": "/models/stories/", "backend": "cpu"}
	mustLoad(t, b, opts)
	req := map[string]any{"prompt": "Once upon a time", "max_tokens": 16, "temperature": 0}
	want := complete(t, b, req).Choices[0].Text
	if urls := cachedURLs(t, b, "/models/stories/"); len(urls) != len(m.Shards)+2 { // shards, tokenizer, manifest
		t.Errorf("cached %v", urls)
	}

	// Stop the server: a new engine in the same page gets its scripts and
	// wasm from the HTTP cache, and the model from Cache Storage.
	b.MustRun(`engine.unload()`, nil)
	srv.Stop()
	info := mustLoad(t, b, opts)
	if info.Load.NetworkBytes != 0 || info.Load.CachedBytes != m.TotalBytes() || !info.Load.ManifestFromCache {
		t.Errorf("offline load %+v", info.Load)
	}
	checkProgress(t, b, m)
	if got := complete(t, b, req).Choices[0].Text; got != want {
		t.Errorf("offline: %q, online: %q", got, want)
	}

	// Reload the page from a server on the same origin whose model folders
	// are unreachable: no shard is requested.
	fs := browsertest.NewFaultServer(t, web, browsertest.Wasm(t), models, srv.Addr)
	fs.SetOffline(true)
	b.Reload()
	info = mustLoad(t, b, opts)
	if info.Load.NetworkBytes != 0 || !info.Load.ManifestFromCache {
		t.Errorf("after reload %+v", info.Load)
	}
	if got := complete(t, b, req).Choices[0].Text; got != want {
		t.Errorf("after reload: %q, online: %q", got, want)
	}
	for _, r := range fs.Requests("/models/") {
		if strings.HasSuffix(r.Path, ".bin") {
			t.Errorf("shard requested while offline: %v", r)
		}
	}
}

// loadCorrupted flips one bit in the middle of file (a file of the stories
// folder under models), loads the folder on the CPU backend in a fresh page
// and returns the "integrity" error the load must fail with, the server
// and the browser.
func loadCorrupted(t *testing.T, models, file string) (*browsertest.JSError, *browsertest.Server, *browsertest.Browser) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	_, err = load(b, map[string]any{"model": "/models/stories/", "backend": "cpu"})
	return wantCode(t, err, "integrity"), srv, b
}

// TestCorruptShard: a shard with one flipped byte fails the load with an
// error naming it, after one retry, and is never cached.
func TestCorruptShard(t *testing.T) {
	t.Parallel()
	models, m := storiesModel(t, "stories")
	je, srv, b := loadCorrupted(t, models, browsertest.ShardPath(filepath.Join(models, "stories"), m, 1))
	if !strings.Contains(je.Message, m.Shards[1].File) || je.Details["shard"] != m.Shards[1].File {
		t.Errorf("error %q %v does not name %s", je.Message, je.Details, m.Shards[1].File)
	}
	if got := srv.Requests("GET /models/stories/" + m.Shards[1].File + " 200"); len(got) != 2 {
		t.Errorf("the bad shard was fetched %d times, want 2 (one retry):\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, u := range cachedURLs(t, b, "/models/stories/") {
		if strings.HasSuffix(u, m.Shards[1].File) || strings.HasSuffix(u, "manifest.json") {
			t.Errorf("cached after a failed load: %s", u)
		}
	}
}

// TestCorruptTokenizer: a tokenizer file that does not match the manifest's
// sha256 fails the load with code "integrity" naming it, and is not cached
// (it used to be cached on any 2xx answer).
func TestCorruptTokenizer(t *testing.T) {
	t.Parallel()
	models, _ := storiesModel(t, "stories")
	je, _, b := loadCorrupted(t, models, filepath.Join(models, "stories", "tokenizer.gguf"))
	if !strings.Contains(je.Message, "tokenizer.gguf") || je.Details["file"] != "tokenizer.gguf" {
		t.Errorf("error %q %v does not name tokenizer.gguf", je.Message, je.Details)
	}
	for _, u := range cachedURLs(t, b, "/models/stories/") {
		if strings.HasSuffix(u, "tokenizer.gguf") || strings.HasSuffix(u, "manifest.json") {
			t.Errorf("cached after a failed load: %s", u)
		}
	}
}

// TestResume: a connection cut halfway through a shard is resumed with a
// Range request from the byte where it stopped, and the load completes.
func TestResume(t *testing.T) {
	t.Parallel()
	models, m := storiesModel(t, "stories")
	fs := browsertest.NewFaultServer(t, browsertest.WebDir(t, nil), browsertest.Wasm(t), models, "")
	shard := "/models/stories/" + m.Shards[0].File
	half := m.Shards[0].Bytes / 2
	fs.CutOnce(shard, half)
	b := browsertest.NewBrowser(t)
	b.Open(fs.URL + "/test.html")
	info := mustLoad(t, b, map[string]any{"model": "/models/stories/", "backend": "cpu"})
	if info.Load.NetworkBytes != m.TotalBytes() {
		t.Errorf("load %+v", info.Load)
	}
	reqs := fs.Requests(shard)
	if len(reqs) != 2 || !reqs[0].Cut || reqs[0].Bytes != half || reqs[1].Range != fmt.Sprintf("bytes=%d-", half) ||
		reqs[1].Status != 206 || reqs[1].Bytes != m.Shards[0].Bytes-half {
		t.Errorf("requests for %s:\n%v", shard, reqs)
	}
	checkProgress(t, b, m)
	if got := complete(t, b, map[string]any{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}); got.Choices[0].Text != ", there was a little girl" {
		t.Errorf("after a resumed load: %q", got.Choices[0].Text)
	}
}

// TestTooLarge: a manifest declaring a tensor larger than the adapter can
// hold fails before any shard is fetched, saying by how much.
func TestTooLarge(t *testing.T) {
	t.Parallel()
	models, m := storiesModel(t, "big")
	dir := filepath.Join(models, "big")
	// A row of 2^30 F32 values is 4 GiB, beyond any WebGPU buffer limit,
	// in a shard the server does not have.
	m.Shards = append(m.Shards, manifest.Shard{File: "shard-00009-" + strings.Repeat("ab", 8) + ".bin", Bytes: 1 << 33, SHA256: strings.Repeat("ab", 32)})
	m.Tensors = append(m.Tensors, manifest.TensorInfo{Name: "huge.weight", DType: "F32", Shape: []int{2, 1 << 30}, Shard: len(m.Shards) - 1, Bytes: 1 << 33})
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, manifest.ManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	_, err = load(b, map[string]any{"model": "/models/big/", "backend": "webgpu"})
	je := wantCode(t, err, "model_too_large")
	if !strings.Contains(je.Message, `"huge.weight"`) || !strings.Contains(je.Message, "too large") || je.Details["over"].(float64) <= 0 {
		t.Errorf("error %q %v", je.Message, je.Details)
	}
	t.Logf("WebGPU: %s", je.Message)
	// On the CPU the whole model must fit the wasm heap.
	_, err = load(b, map[string]any{"model": "/models/big/", "backend": "cpu"})
	je = wantCode(t, err, "model_too_large")
	if !strings.Contains(je.Message, "wasm heap") || je.Details["over"].(float64) <= 0 {
		t.Errorf("error %q %v", je.Message, je.Details)
	}
	t.Logf("CPU: %s", je.Message)
	if got := srv.Requests(".bin "); len(got) != 0 {
		t.Errorf("shards fetched before the check:\n%s", strings.Join(got, "\n"))
	}
}

// TestProgress: on a slow connection, progress events come at most 10 times
// a second, never go back, and end at exactly the total.
func TestProgress(t *testing.T) {
	t.Parallel()
	models, m := storiesModel(t, "stories")
	fs := browsertest.NewFaultServer(t, browsertest.WebDir(t, nil), browsertest.Wasm(t), models, "")
	fs.SetRate(400 << 10) // about 3 s for the model
	b := browsertest.NewBrowser(t)
	b.Open(fs.URL + "/test.html")
	mustLoad(t, b, map[string]any{"model": "/models/stories/", "backend": "cpu"})
	ev := checkProgress(t, b, m)
	if len(ev) < 5 {
		t.Errorf("only %d progress events over a slow load", len(ev))
	}
	rated := false
	for i, e := range ev {
		rated = rated || e.Rate > 0
		// At most 10 a second (one more for arrival jitter).
		n := 0
		for _, f := range ev[i:] {
			if f.T-e.T < 1000 {
				n++
			}
		}
		if n > 11 {
			t.Errorf("%d events within a second from event %d", n, i)
			break
		}
	}
	if !rated {
		t.Error("no event has a rate")
	}
	t.Logf("%d progress events, last %+v", len(ev), ev[len(ev)-1])
}

// TestAbort: abort() stops a stream within one token, the request ends with
// finish_reason "abort", and the engine answers the next request; aborting
// a load rejects with code "aborted" and caches no manifest.
func TestAbort(t *testing.T) {
	t.Parallel()
	models, _ := storiesModel(t, "stories")
	fs := browsertest.NewFaultServer(t, browsertest.WebDir(t, nil), browsertest.Wasm(t), models, "")
	b := browsertest.NewBrowser(t)
	b.Open(fs.URL + "/test.html")
	mustLoad(t, b, map[string]any{"model": "/models/stories/", "backend": "cpu"})
	res := abortStream(t, b, "")
	if res.Finish != "abort" || res.After > 1 || !res.Pinged {
		t.Errorf("abort: %d tokens before the worker saw it, %d after (pinged %v), finish %q", res.Before, res.After, res.Pinged, res.Finish)
	}
	if n := res.Usage["completion_tokens"].(float64); n != float64(res.Before+res.After) || n < 5 {
		t.Errorf("usage after abort %v, %d+%d tokens streamed", res.Usage, res.Before, res.After)
	}
	if got := complete(t, b, map[string]any{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}); got.Choices[0].FinishReason != "length" || got.Choices[0].Text != ", there was a little girl" {
		t.Errorf("after abort: %+v", got)
	}
	b.MustRun(`engine.unload()`, nil)
	b.MustRun(`caches.delete(wasmllm.cacheNameFor("/models/stories/"))`, nil)

	// Abort a slow load once it has started.
	fs.SetRate(100 << 10)
	err := b.Run(`(() => {
		const ac = new AbortController();
		const p = wasmllm.createEngine({model: "/models/stories/", backend: "cpu", signal: ac.signal,
			onProgress: (e) => { if (e.bytes > 0) ac.abort(); }});
		return p;
	})()`, nil)
	wantCode(t, err, "aborted")
	for _, u := range cachedURLs(t, b, "/models/stories/") {
		if strings.HasSuffix(u, "manifest.json") {
			t.Errorf("manifest cached after an aborted load")
		}
	}
	fs.SetRate(0)
	mustLoad(t, b, map[string]any{"model": "/models/stories/", "backend": "cpu"})
}

// TestChat: chat completions with a chat template, streaming and not; the
// second turn reuses the first's KV cache; errors keep their codes.
func TestChat(t *testing.T) {
	t.Parallel()
	models := t.TempDir()
	browsertest.Convert(t, browsertest.RepoFile("testdata/models/tiny-qwen3-q8_0.gguf"), filepath.Join(models, "qwen"),
		browsertest.ConvertOptions{Tokenizer: browsertest.ChatTokenizer(t, "tiny-qwen3")})
	storiesModels, _ := storiesModel(t, "stories")
	if err := os.Rename(filepath.Join(storiesModels, "stories"), filepath.Join(models, "stories")); err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	mustLoad(t, b, map[string]any{"model": "/models/qwen/", "backend": "cpu", "contextLength": 512})

	turn1 := []map[string]any{{"role": "user", "content": "Hello there"}}
	var chunks []map[string]any
	b.MustRun(`(async () => { const out = []; for await (const c of await engine.chat.completions.create(`+
		jsValue(map[string]any{"messages": turn1, "max_tokens": 6, "temperature": 0, "stream": true,
			"chat_template_kwargs": map[string]any{"enable_thinking": false}})+`)) out.push(c); return out; })()`, &chunks)
	if len(chunks) < 2 {
		t.Fatalf("chunks %v", chunks)
	}
	first := chunks[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	if first["role"] != "assistant" || chunks[0]["object"] != "chat.completion.chunk" {
		t.Errorf("first chunk %v", chunks[0])
	}
	var reply strings.Builder
	for _, c := range chunks[1:] {
		ch := c["choices"].([]any)[0].(map[string]any)
		if s, ok := ch["delta"].(map[string]any)["content"].(string); ok {
			reply.WriteString(s)
		}
	}
	last := chunks[len(chunks)-1]
	// No stream_options.include_usage: the finish chunk ends the stream,
	// with timings and no usage (OpenAI's shape).
	if last["choices"].([]any)[0].(map[string]any)["finish_reason"] == nil || last["usage"] != nil || last["timings"] == nil {
		t.Errorf("last chunk %v", last)
	}

	turn2 := append(turn1, map[string]any{"role": "assistant", "content": reply.String()}, map[string]any{"role": "user", "content": "And again"})
	var c completion
	b.MustRun(`engine.chat.completions.create(`+jsValue(map[string]any{"messages": turn2, "max_tokens": 6, "temperature": 0,
		"chat_template_kwargs": map[string]any{"enable_thinking": false}})+`)`, &c)
	if c.Object != "chat.completion" || c.Choices[0].Message == nil || c.Choices[0].Message.Role != "assistant" {
		t.Errorf("response %+v", c)
	}
	if cached := c.Usage.PromptTokensDetails.CachedTokens; cached < 10 || cached >= c.Usage.PromptTokens {
		t.Errorf("second turn: %d of %d prompt tokens cached", cached, c.Usage.PromptTokens)
	}
	t.Logf("second turn: %d of %d prompt tokens cached", c.Usage.PromptTokensDetails.CachedTokens, c.Usage.PromptTokens)

	err := b.Run(`engine.chat.completions.create({messages: [{role: "user", content: "x"}], top_p: 3})`, nil)
	wantCode(t, err, "bad_request")
	err = b.Run(`engine.chat.completions.create({messages: [{role: "user", content: "hello world ".repeat(500)}]})`, nil)
	wantCode(t, err, "context_overflow")
	b.MustRun(`engine.unload()`, nil)

	mustLoad(t, b, map[string]any{"model": "/models/stories/", "backend": "cpu"})
	err = b.Run(`engine.chat.completions.create({messages: [{role: "user", content: "x"}]})`, nil)
	wantCode(t, err, "no_chat_template")
	err = b.Run(`wasmllm.createEngine({model: "/models/none/", backend: "cpu"})`, nil)
	wantCode(t, err, "network")
}

// TestDeleteCachedModel: deleteCachedModel empties the model's cache, and
// the next load downloads again.
func TestDeleteCachedModel(t *testing.T) {
	t.Parallel()
	models, m := storiesModel(t, "stories")
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	opts := map[string]any{"model": "/models/stories/", "backend": "cpu"}
	mustLoad(t, b, opts)
	if info := mustLoad(t, b, opts); info.Load.NetworkBytes != 0 {
		t.Errorf("second load %+v", info.Load)
	}
	var deleted bool
	b.MustRun(`engine.deleteCachedModel()`, &deleted)
	if urls := cachedURLs(t, b, "/models/stories/"); !deleted || urls != nil {
		t.Errorf("deleted %v, still cached %v", deleted, urls)
	}
	if info := mustLoad(t, b, opts); info.Load.NetworkBytes != m.TotalBytes() {
		t.Errorf("load after delete %+v", info.Load)
	}
}

// TestNoWebGPU: without a WebGPU adapter the engine runs on the CPU backend
// with a notice for the page, unless WebGPU was asked for.
func TestNoWebGPU(t *testing.T) {
	t.Parallel()
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: browsertest.RepoFile("models")})
	b := browsertest.NewBrowser(t, browsertest.NoWebGPU)
	b.Open(srv.URL + "/test.html")
	var res struct {
		Info    loadInfo `json:"info"`
		Notices []string `json:"notices"`
	}
	b.MustRun(`(async () => { const notices = [];
		window.engine = await wasmllm.createEngine({model: "/models/stories260K/", onNotice: (m) => notices.push(m)});
		return {info: engine.info, notices}; })()`, &res)
	if res.Info.Backend != "cpu" || !strings.Contains(res.Info.Notice, "WebGPU is not available") ||
		len(res.Notices) != 1 || res.Notices[0] != res.Info.Notice {
		t.Errorf("info %+v, notices %q", res.Info, res.Notices)
	}
	t.Logf("notice: %s", res.Info.Notice)
	if got := complete(t, b, map[string]any{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}); got.Choices[0].Text != ", there was a little girl" {
		t.Errorf("CPU fallback: %q", got.Choices[0].Text)
	}
	b.MustRun(`engine.unload()`, nil)
	_, err := load(b, map[string]any{"model": "/models/stories260K/", "backend": "webgpu"})
	wantCode(t, err, "no_webgpu")
}

// TestSoftwareAdapter: left to choose, the engine prefers the CPU backend
// to a software WebGPU adapter (SwiftShader), with a notice; asked for
// WebGPU, it uses the adapter anyway. On a real GPU it takes WebGPU.
func TestSoftwareAdapter(t *testing.T) {
	t.Parallel()
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: browsertest.RepoFile("models")})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	gpuInfo := mustLoad(t, b, map[string]any{"model": "/models/stories260K/", "backend": "webgpu"})
	if gpuInfo.Backend != "webgpu" || gpuInfo.Adapter == nil {
		t.Fatalf("asked for WebGPU: %+v", gpuInfo)
	}
	b.MustRun(`engine.unload()`, nil)
	auto := mustLoad(t, b, map[string]any{"model": "/models/stories260K/"})
	t.Logf("adapter %+v; left to choose: backend %s, notice %q", *gpuInfo.Adapter, auto.Backend, auto.Notice)
	if gpuInfo.Adapter.Fallback {
		if auto.Backend != "cpu" || !strings.Contains(auto.Notice, "software renderer") {
			t.Errorf("software adapter: backend %q, notice %q; want the CPU with a notice", auto.Backend, auto.Notice)
		}
	} else if auto.Backend != "webgpu" {
		t.Errorf("hardware adapter: backend %q, want webgpu", auto.Backend)
	}
}

// TestQuota: a model that does not fit the origin's storage quota fails
// before any shard is fetched, saying by how much; shards already cached
// do not count. (Chromium's quota override over CDP does not reach
// navigator.storage.estimate(), so the test gives the figures.)
func TestQuota(t *testing.T) {
	t.Parallel()
	models, m := storiesModel(t, "stories")
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	total := m.TotalBytes()
	opts := map[string]any{"model": "/models/stories/", "backend": "cpu", "storageEstimate": map[string]any{"quota": 10 << 20, "usage": 10<<20 - total/2}}
	_, err := load(b, opts)
	je := wantCode(t, err, "quota_exceeded")
	if je.Details["need"].(float64) != float64(total) || je.Details["short"].(float64) != float64(total-total/2) || !strings.Contains(je.Message, "short") {
		t.Errorf("error %q %v", je.Message, je.Details)
	}
	t.Logf("%s", je.Message)
	if got := srv.Requests(".bin "); len(got) != 0 {
		t.Errorf("shards fetched before the quota check:\n%s", strings.Join(got, "\n"))
	}
	mustLoad(t, b, map[string]any{"model": "/models/stories/", "backend": "cpu"})
	// With every shard cached, nothing more is needed.
	opts["storageEstimate"] = map[string]any{"quota": 10 << 20, "usage": 10 << 20}
	if info := mustLoad(t, b, opts); info.Load.CachedBytes != total {
		t.Errorf("cached load %+v", info.Load)
	}
}

// TestPersist: before a large download (here: persistBytes 1) the page
// asks navigator.storage.persist(), which workers lack, through the
// worker, and info.load.persist says what the browser answered; persist:
// false does not ask, and neither does a load with nothing to download. A
// model over the quota still runs with cache: false.
func TestPersist(t *testing.T) {
	t.Parallel()
	models, _ := storiesModel(t, "stories")
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	off := mustLoad(t, b, map[string]any{"model": "/models/stories/", "backend": "cpu", "persist": false, "persistBytes": 1, "cache": false})
	if off.Load.Persist != nil {
		t.Errorf("persist: false asked: %+v", *off.Load.Persist)
	}
	b.MustRun(`engine.unload()`, nil)
	info := mustLoad(t, b, map[string]any{"model": "/models/stories/", "backend": "cpu", "persistBytes": 1})
	if p := info.Load.Persist; p == nil || !(p.Asked || p.Already) {
		t.Fatalf("persist before a download: %+v", p)
	}
	t.Logf("navigator.storage.persist(): %+v", *info.Load.Persist)
	b.MustRun(`engine.unload()`, nil)
	if cached := mustLoad(t, b, map[string]any{"model": "/models/stories/", "backend": "cpu", "persistBytes": 1}); cached.Load.Persist != nil {
		t.Errorf("nothing to download, yet asked: %+v", *cached.Load.Persist)
	}
	b.MustRun(`engine.unload()`, nil)
	// Over the quota: fails with the cache, runs without it.
	tight := map[string]any{"quota": 10 << 20, "usage": 10 << 20}
	b.MustRun(`caches.keys().then((ks) => Promise.all(ks.map((k) => caches.delete(k))))`, nil)
	_, err := load(b, map[string]any{"model": "/models/stories/", "backend": "cpu", "storageEstimate": tight})
	wantCode(t, err, "quota_exceeded")
	if nc := mustLoad(t, b, map[string]any{"model": "/models/stories/", "backend": "cpu", "storageEstimate": tight, "cache": false}); nc.Load.NetworkBytes == 0 {
		t.Errorf("cache: false: %+v", nc.Load)
	}
}

// abortCount is what abortStream saw: tokens streamed before and after the
// worker read the abort, and how the request ended.
type abortCount struct {
	Before, After int
	Pinged        bool
	Finish        string
	Usage         map[string]any
}

// abortStream streams a long greedy completion (its request extended by
// the JavaScript object fields extra, e.g. "logits_processors: [f]") and
// aborts it at the fifth token. Tokens the worker sent before it saw the
// stop may still sit in the page's queue, so After counts what the worker
// generated once it had the abort: a ping posted right behind the abort is
// answered when the worker reads its messages, which is when the abort
// takes effect.
func abortStream(t *testing.T, b *browsertest.Browser, extra string) abortCount {
	t.Helper()
	var res abortCount
	b.MustRun(`(async () => {
		let before = 0, after = 0, pinged = false, finish = "", usage = null;
		const w = engine._conn.worker;
		const onMsg = (ev) => {
			const m = ev.data || {}, ch = m.data && m.data.choices && m.data.choices[0];
			if (m.id === -7) pinged = true;
			else if (m.type === "chunk" && ch && ch.text) { if (pinged) after++; else before++; }
		};
		w.addEventListener("message", onMsg);
		const stream = await engine.completions.create({prompt: "Once upon a time", max_tokens: 400, temperature: 0, ignore_eos: true, stream: true,
			stream_options: {include_usage: true}, `+extra+`});
		let seen = 0;
		for await (const c of stream) {
			const ch = c.choices[0];
			if (!ch) { usage = c.usage; continue; } // the include_usage chunk
			if (ch.finish_reason) { finish = ch.finish_reason; continue; }
			if (ch.text && ++seen === 5) { engine.abort(); w.postMessage({id: -7, op: "init"}); }
		}
		w.removeEventListener("message", onMsg);
		return {before, after, finish, usage, pinged};
	})()`, &res)
	return res
}
