package e2e

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
)

// TestDistStatic writes the site with `go run ./cmd/dist` and serves it
// with a plain static file server (net/http's FileServer: no wasmllm
// routes, no /models/ listing, no COOP/COEP headers) under a sub-path, as
// a static host would: the picker is filled from models/index.json, the
// bundled model loads, and the reply equals cmd/generate. The site is
// written without .br files (-brotli ""): a file server serves none of
// them, brotli -q 11 on the 14 MB wasm costs half a minute of a core, and
// cmd/dist's TestBrotli checks the .br files dist writes.
func TestDistStatic(t *testing.T) {
	skipShort(t)
	models := modelsDir(t)
	model := filepath.Join(models, "stories260K")
	site := filepath.Join(t.TempDir(), "site")
	cmd := exec.Command("go", "run", "./cmd/dist", "-o", site, "-web", browsertest.RepoFile("web"), "-wasm", browsertest.Wasm(t), "-models", models, "-brotli", "")
	cmd.Dir = browsertest.RepoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./cmd/dist: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if !strings.Contains(string(out), "wasmllm.wasm ") || !strings.Contains(string(out), " gzip") {
		t.Errorf("dist did not report the wasm size: %s", out)
	}

	mux := http.NewServeMux()
	mux.Handle("/app/", http.StripPrefix("/app/", http.FileServer(http.Dir(site))))
	static := httptest.NewServer(mux)
	t.Cleanup(static.Close)
	b := browsertest.NewBrowser(t)
	openPage(t, b, static.URL+"/app/?backend=cpu")
	var options []string
	b.MustRun(`[...document.querySelectorAll("[data-testid=model] option")].map((o) => o.value)`, &options)
	if !slices.Equal(options, []string{"stories260K"}) {
		t.Errorf("picker %v, want the bundled model from models/index.json", options)
	}
	s := settings{Temperature: 0.6, TopP: 0.9, TopK: 50, MinP: 0.05, RepetitionPenalty: 1, MaxTokens: 20, Seed: 21}
	s.apply(t, b)
	typeMessage(t, b, "Once upon a time")
	r := waitReply(t, b, 1)
	want := generate(t, append([]string{"-model", model, "-prompt", "Once upon a time"}, s.flags()...)...)
	if r.Text != want.Text {
		t.Errorf("reply from the static site %q\ngenerate                  %q", r.Text, want.Text)
	}
}
