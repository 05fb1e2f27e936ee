package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
)

// TestOffline visits the page once online, stops the server, reloads, and
// chats: the service worker serves the page, the scripts and the wasm, and
// the loader's caches serve the model.
func TestOffline(t *testing.T) {
	skipShort(t)
	models := modelsDir(t)
	model := filepath.Join(models, "stories260K")
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	openPage(t, b, srv.URL+"/?model=stories260K&backend=cpu")
	if err := b.WaitFor(`wasmllmApp.offline === "ready"`, replyTimeout, nil); err != nil {
		var state string
		b.Run(`wasmllmApp.offline`, &state)
		t.Fatalf("service worker: %v (state %q)", err, state)
	}
	var shell []string
	b.MustRun(`caches.open("wasmllm-shell-v1").then((c) => c.keys()).then((ks) => ks.map((r) => new URL(r.url).pathname))`, &shell)
	for _, p := range []string{"/", "/index.html", "/app.js", "/chat.js", "/markdown.js", "/vendor/markdown-it/markdown-it.min.js", "/styles.css", "/wasmllm.js", "/remote.js", "/stream.js", "/worker.js", "/loader.js", "/wasm_exec.js", "/wasmllm.wasm", "/wasmllm-chat.js", "/links.js", "/models/"} {
		if !slices.Contains(shell, p) {
			t.Errorf("the shell cache lacks %s (has %v)", p, shell)
		}
	}
	s := settings{Temperature: 0.9, TopP: 0.95, TopK: 30, MinP: 0.02, RepetitionPenalty: 1, MaxTokens: 24, Seed: 3}
	s.apply(t, b)
	typeMessage(t, b, "Once upon a time")
	online := waitReply(t, b, 1)

	srv.Stop()
	var probe string
	b.MustRun(`fetch("/models/stories260K/manifest.json", {cache: "no-store"}).then(() => "up", () => "down")`, &probe)
	if probe != "down" {
		t.Fatalf("the server still answers after Stop (%s)", probe)
	}
	b.Reload()
	waitReady(t, b)
	var info struct {
		Backend string
		Load    struct {
			NetworkBytes      int64 `json:"network_bytes"`
			CachedBytes       int64 `json:"cached_bytes"`
			ManifestFromCache bool  `json:"manifest_from_cache"`
		}
		Controlled bool
		Options    []string
	}
	b.MustRun(`({Backend: wasmllmApp.info.backend, Load: wasmllmApp.info.load, Controlled: !!navigator.serviceWorker.controller,
		Options: [...document.querySelectorAll("[data-testid=model] option")].map((o) => o.value)})`, &info)
	t.Logf("offline reload: %+v", info)
	if !info.Controlled || info.Load.NetworkBytes != 0 || info.Load.CachedBytes == 0 || !info.Load.ManifestFromCache {
		t.Errorf("offline load: %+v; want a controlled page, everything from the cache", info)
	}
	if !slices.Equal(info.Options, []string{"stories260K"}) {
		t.Errorf("offline picker %v, want the cached listing", info.Options)
	}
	s.apply(t, b)
	typeMessage(t, b, "Once upon a time")
	offline := waitReply(t, b, 1)
	if offline.Text != online.Text || offline.Text == "" {
		t.Errorf("offline reply %q, online %q", offline.Text, online.Text)
	}
	want := generate(t, append([]string{"-model", model, "-prompt", "Once upon a time"}, s.flags()...)...)
	if online.Text != want.Text {
		t.Errorf("online reply %q, generate %q", online.Text, want.Text)
	}
	if strings.Contains(strings.Join(b.Console(), "\n"), "Uncaught") {
		t.Errorf("uncaught errors:\n%s", strings.Join(b.Console(), "\n"))
	}
}
