package e2e

import (
	"path/filepath"
	"testing"

	"wasmllm/internal/testkit/browsertest"
)

// TestChatPageWebGPU runs the page on WebGPU (SwiftShader in headless
// Chromium, which the page only uses when asked: left to choose, it prefers
// the CPU engine to a software adapter): a greedy reply equals cmd/generate
// on the CPU, and stop ends a reply within one token. SwiftShader is slow,
// so the replies are short.
func TestChatPageWebGPU(t *testing.T) {
	skipShort(t)
	models := modelsDir(t)
	model := filepath.Join(models, "stories260K")
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	openPage(t, b, srv.URL+"/?model=stories260K&backend=webgpu")
	var page struct {
		Backend, Badge string
		NoticeHidden   bool
		LoadMS         float64
	}
	b.MustRun(`({Backend: wasmllmApp.info.backend, Badge: document.querySelector("[data-testid=backend]").textContent,
		NoticeHidden: document.querySelector("[data-testid=notice]").hidden, LoadMS: wasmllmApp.info.load.ms})`, &page)
	t.Logf("WebGPU page: %+v", page)
	if page.Backend != "webgpu" || page.Badge != "WebGPU" || !page.NoticeHidden {
		t.Fatalf("page %+v: want WebGPU without a notice", page)
	}
	s := settings{Temperature: 0, TopP: 1, TopK: 0, MinP: 0, RepetitionPenalty: 1, MaxTokens: 8, Seed: 1}
	s.apply(t, b)
	typeMessage(t, b, "Once upon a time")
	r := waitReply(t, b, 1)
	want := generate(t, append([]string{"-model", model, "-prompt", "Once upon a time"}, s.flags()...)...)
	if r.Text != want.Text {
		t.Errorf("WebGPU reply %q\ngenerate    %q", r.Text, want.Text)
	}
	t.Logf("WebGPU: prefill %.1f tok/s, decode %.1f tok/s", r.Timings.PrefillPerSecond, r.Timings.DecodePerSecond)

	installStopProbe(t, b)
	s.MaxTokens = 0
	s.apply(t, b)
	typeMessage(t, b, " One day")
	if err := b.WaitFor(`wasmllmApp.chunks >= 2`, replyTimeout, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Click("[data-testid=stop]"); err != nil {
		t.Fatal(err)
	}
	checkStopped(t, b, waitReply(t, b, 2), "WebGPU stop")
}
