package e2e

import (
	"regexp"
	"testing"
	"time"

	"wasmllm/internal/testkit/browsertest"
)

// TestDownloadProgress loads the model from a server that sends it at
// 300 KiB/s and watches the progress bar: it fills without going back, and
// its text gives the bytes, the rate and the time left.
func TestDownloadProgress(t *testing.T) {
	skipShort(t)
	srv := browsertest.NewFaultServer(t, browsertest.WebDir(t, nil), browsertest.Wasm(t), modelsDir(t), "")
	srv.SetRate(300 << 10)
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/index.html?model=stories260K&backend=cpu")
	type sample struct {
		Value, Max   float64
		Text, Status string
	}
	live := regexp.MustCompile(`^\d+(\.\d+)? (B|KiB|MiB) of 1\.12 MiB · \d+(\.\d+)? (B|KiB|MiB)/s · (<1 s|\d+ s) left$`)
	var samples []sample
	shot := false
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var s sample
		b.MustRun(`(() => { const p = document.querySelector("[data-testid=progress]"); return {Value: p.value, Max: p.max,
			Text: document.querySelector("[data-testid=progress-text]").textContent, Status: document.querySelector("[data-testid=status]").textContent}; })()`, &s)
		samples = append(samples, s)
		if !shot && s.Value > s.Max/3 && live.MatchString(s.Text) {
			screenshot(t, b, "download-progress.png")
			shot = true
		}
		if s.Status == "ready" || s.Status == "error" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	seen, last := 0, 0.0
	for _, s := range samples {
		if s.Value < last {
			t.Errorf("the bar went back from %v to %v", last, s.Value)
		}
		last = s.Value
		if s.Status == "downloading" && live.MatchString(s.Text) {
			seen++
		}
	}
	end := samples[len(samples)-1]
	t.Logf("%d samples, %d with bytes, rate and time left; e.g. %q; last %+v", len(samples), seen, samples[len(samples)/2].Text, end)
	if end.Status != "ready" || end.Value != end.Max || end.Max != 1171200 {
		t.Errorf("final state %+v, want ready with a full bar", end)
	}
	if seen < 3 {
		t.Errorf("only %d progress texts with bytes, rate and time left: %+v", seen, samples)
	}
}
