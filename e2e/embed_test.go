package e2e

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"

	"wasmllm/internal/testkit/browsertest"
)

// TestEmbedCrossOrigin puts <wasmllm-chat> in a plain page served from
// another origin (another port) than the wasmllm server (started with
// -cors), and chats: the element finds its worker, wasm_exec.js, the wasm
// and the model next to its own script.
func TestEmbedCrossOrigin(t *testing.T) {
	skipShort(t)
	models := modelsDir(t)
	model := filepath.Join(models, "stories260K")
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models, Args: []string{"-cors", "*"}})
	s := settings{Temperature: 0.8, TopP: 0.9, TopK: 40, MinP: 0.05, RepetitionPenalty: 1.1, MaxTokens: 32, Seed: 5}
	attrs := fmt.Sprintf(`model="stories260K" backend="cpu" temperature="%v" top-p="%v" top-k="%d" min-p="%v" repetition-penalty="%v" frequency-penalty="%v" presence-penalty="%v" max-tokens="%d" seed="%d"`,
		s.Temperature, s.TopP, s.TopK, s.MinP, s.RepetitionPenalty, s.FrequencyPenalty, s.PresencePenalty, s.MaxTokens, s.Seed)
	page := `<!doctype html>
<meta charset="utf-8">
<title>A page elsewhere</title>
<body style="font-family: serif; max-width: 640px; margin: 24px auto">
<h1>Someone else's page</h1>
<p>It embeds the chat box with one script tag.</p>
<script type="module" src="` + html.EscapeString(srv.URL) + `/wasmllm-chat.js"></script>
<wasmllm-chat ` + attrs + `></wasmllm-chat>
<script>window.pageReady = true;</script>
`
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	}))
	t.Cleanup(other.Close)
	if strings.TrimPrefix(other.URL, "http://") == srv.Addr {
		t.Fatal("the two servers share an origin")
	}

	b := browsertest.NewBrowser(t)
	if err := b.Viewport(900, 800, 1, false); err != nil {
		t.Fatal(err)
	}
	b.Open(other.URL + "/")
	const el = `document.querySelector("wasmllm-chat")`
	if err := b.WaitFor(el+`.shadowRoot.querySelector("[data-testid=status]").textContent === "ready"`, 3*time.Minute, nil); err != nil {
		var status string
		b.Run(el+`.shadowRoot.querySelector(".bar").textContent`, &status)
		t.Fatalf("%v (status %q)", err, status)
	}
	b.MustRun(el+`.shadowRoot.querySelector("[data-testid=prompt]").focus()`, nil)
	if err := b.Keys("Once upon a time" + kb.Enter); err != nil {
		t.Fatal(err)
	}
	var r reply
	if err := b.WaitFor(el+`.history[0]`, replyTimeout, &r); err != nil {
		t.Fatal(err)
	}
	if r.Error != nil {
		t.Fatalf("reply failed: %s: %s", r.Error.Code, r.Error.Message)
	}
	want := generate(t, append([]string{"-model", model, "-prompt", "Once upon a time"}, s.flags()...)...)
	if r.Text != want.Text {
		t.Errorf("embedded reply %q\ngenerate        %q", r.Text, want.Text)
	}
	var shown struct {
		Answer, Origin, Script string
		Notes                  string
	}
	b.MustRun(`({Answer: `+el+`.shadowRoot.querySelector("[data-testid=assistant] .answer").textContent, Origin: location.origin,
		Script: document.querySelector("script[type=module]").src, Notes: `+el+`.shadowRoot.querySelector("[data-testid=notice]").textContent})`, &shown)
	if shown.Answer != r.Text {
		t.Errorf("the element shows %q, want %q", shown.Answer, r.Text)
	}
	if !strings.Contains(shown.Notes, "no chat template") {
		t.Errorf("notes %q: want the plain-continuation note", shown.Notes)
	}
	t.Logf("page origin %s, element script %s", shown.Origin, shown.Script)
	if got := srv.Requests("/worker.js"); len(got) == 0 {
		t.Error("the worker script was not fetched from the wasmllm server")
	}
	screenshot(t, b, "embed-cross-origin.png")
}
