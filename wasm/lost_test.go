//go:build !js

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/manifest"
)

// lostStream is what the page's streaming request collected.
type lostStream struct {
	Text   string               `json:"text"`
	Chunks int                  `json:"chunks"`
	Error  *browsertest.JSError `json:"error"`
}

// startStream starts a streaming completion into window.run; wait for it
// with awaitStream.
func startStream(b *browsertest.Browser, req map[string]any) {
	b.MustRun(`(window.run = {text: "", chunks: 0, error: null}, window.runDone = (async () => {
		try {
			for await (const c of await engine.completions.create(`+jsValue(req)+`)) { run.text += c.choices[0].text; run.chunks++; }
		} catch (e) { run.error = {code: e.code, message: e.message, details: e.details || null}; }
	})(), true)`, nil)
}

func awaitStream(b *browsertest.Browser) *lostStream {
	var s lostStream
	b.MustRun(`window.runDone.then(() => window.run)`, &s)
	return &s
}

// TestDeviceLost crashes the GPU process in the middle of a streamed reply
// on WebGPU: the request fails with device_lost and its reason, the engine
// unloads itself (later requests fail the same way), and engine.reload()
// loads the model again on a new device without one network request,
// keeping the same engine object, and generates what it did before. So
// does a second crash, while idle; a new createEngine on the same page
// works too; after a third crash, with no adapter left, reload fails with
// no_webgpu.
func TestDeviceLost(t *testing.T) {
	t.Parallel()
	models := browsertest.RepoFile("models")
	m, err := manifest.Read(filepath.Join(models, "stories260K"))
	if err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b, crash := browsertest.NewCrashableBrowser(t, chromedp.Flag("disable-domain-blocking-for-3d-apis", true))
	b.Open(srv.URL + "/test.html")
	opts := map[string]any{"model": "/models/stories260K/", "backend": "webgpu"}
	if info := mustLoad(t, b, opts); info.Backend != "webgpu" {
		t.Fatalf("backend %q", info.Backend)
	}
	b.MustRun(`window.firstEngine = engine, true`, nil)
	req := map[string]any{"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0.8, "top_k": 40, "seed": 7}
	want := complete(t, b, req).Choices[0].Text
	long := map[string]any{"prompt": "Once upon a time", "max_tokens": 200, "temperature": 0, "ignore_eos": true, "stream": true}

	// Crash once the reply is streaming.
	startStream(b, long)
	deadline := time.Now().Add(2 * time.Minute)
	for chunks := 0; chunks < 4; {
		if time.Now().After(deadline) {
			t.Fatal("the stream did not start")
		}
		time.Sleep(20 * time.Millisecond)
		b.MustRun(`run.chunks`, &chunks)
	}
	crashed := time.Now()
	crash()
	s := awaitStream(b)
	t.Logf("crash after %d chunks; the request failed %v later: %v", s.Chunks, time.Since(crashed).Round(time.Millisecond), s.Error)
	if s.Error == nil {
		t.Fatalf("the stream ended without an error after %d chunks", s.Chunks)
	}
	checkLost(t, s.Error)
	before := s.Text

	// The model is unloaded: a request fails at once, the same way.
	if err := b.Run(`engine.completions.create(`+jsValue(req)+`)`, nil); err == nil {
		t.Error("a request after the loss succeeded")
	} else {
		checkLost(t, wantCode(t, err, "device_lost"))
	}

	reloadOK := func(what string) {
		t.Helper()
		logged := len(srv.Log())
		var info loadInfo
		b.MustRun(`engine.reload()`, &info)
		var same bool
		b.MustRun(`engine === firstEngine && engine.info.backend === "webgpu"`, &same)
		if info.Backend != "webgpu" || !same {
			t.Errorf("%s: backend %q, same engine object %v", what, info.Backend, same)
		}
		if info.Load.NetworkBytes != 0 || info.Load.CachedBytes != m.TotalBytes() {
			t.Errorf("%s: load %+v, want every shard from Cache Storage", what, info.Load)
		}
		for _, l := range srv.Log()[logged:] {
			if strings.Contains(l, "/models/") {
				t.Errorf("%s: network request %s", what, l)
			}
		}
		if got := complete(t, b, req).Choices[0].Text; got != want {
			t.Errorf("%s: %q, before the loss %q", what, got, want)
		}
		var stats map[string]float64
		b.MustRun(`engine.stats`, &stats)
		t.Logf("%s: %.0f ms %v; then %.1f tok/s", what, info.Load.MS, info.Load.Phases, stats["decode_tokens_per_s"])
	}
	reloadOK("reload after a crash mid-reply")
	// The reply cut by the crash was the start of the same greedy reply.
	startStream(b, long)
	if s := awaitStream(b); s.Error != nil || !strings.HasPrefix(s.Text, before) || len(s.Text) <= len(before) {
		t.Errorf("greedy reply after the reload (error %v):\n%q\ndoes not extend the one cut by the crash:\n%q", s.Error, s.Text, before)
	}

	// A crash while idle: the next request reports it.
	crash()
	err = b.Run(`engine.completions.create(`+jsValue(req)+`)`, nil)
	checkLost(t, wantCode(t, err, "device_lost"))
	reloadOK("reload after a crash while idle")

	// A new engine on the same page works too.
	b.MustRun(`engine.unload()`, nil)
	if err := b.Run(`engine.reload()`, nil); err == nil {
		t.Error("reload after unload() succeeded")
	} else {
		wantCode(t, err, "not_loaded")
	}
	mustLoad(t, b, opts)
	if got := complete(t, b, req).Choices[0].Text; got != want {
		t.Errorf("new engine: %q, before the loss %q", got, want)
	}

	// A third crash: Chromium gives up on the GPU process. The reload
	// fails with no_webgpu (backend "webgpu" was asked for) instead of
	// hanging; a Chromium that recovers must give the same text.
	crash()
	err = b.Run(`engine.completions.create(`+jsValue(req)+`)`, nil)
	checkLost(t, wantCode(t, err, "device_lost"))
	var info loadInfo
	if err := b.Run(`engine.reload()`, &info); err != nil {
		wantCode(t, err, "no_webgpu")
		t.Logf("reload after a third crash: %v", err)
	} else if got := complete(t, b, req).Choices[0].Text; info.Backend != "webgpu" || got != want {
		t.Errorf("reload after a third crash: backend %q, %q, before the loss %q", info.Backend, got, want)
	}
}

// checkLost checks a device_lost error from a real GPU process crash.
func checkLost(t *testing.T, e *browsertest.JSError) {
	t.Helper()
	if e.Code != "device_lost" || e.Details["reason"] != "unknown" || !strings.Contains(e.Message, "engine.reload()") {
		t.Errorf("error %+v, want code device_lost, reason unknown and a message saying to reload", *e)
	}
}
