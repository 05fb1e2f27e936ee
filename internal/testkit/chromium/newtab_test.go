package chromium

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"wasmllm/internal/testkit"
)

// TestNewTab opens a second tab in the same browser: it shares the first
// tab's origin (a Web Lock it holds is seen from the first tab), and its
// Close closes only it, as a user closing the tab would (its lock is
// released, and the first tab still answers).
func TestNewTab(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Chromium")
	}
	testkit.Need(t, Path() != "", "no Chromium (set WASMLLM_CHROMIUM)")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><script>window.pageReady = true;</script>`))
	}))
	defer srv.Close()
	first, err := Start(context.Background(), Options{Profile: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := first.Open(srv.URL, time.Minute); err != nil {
		t.Fatal(err)
	}
	second, err := first.NewTab()
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Open(srv.URL, time.Minute); err != nil {
		t.Fatal(err)
	}
	r, err := second.Eval(`new Promise((ok) => navigator.locks.request("held", () => { ok(true); return new Promise(() => {}); }))`, `e => String(e)`, time.Minute)
	if err != nil || !r.OK {
		t.Fatalf("taking the lock in the second tab: %+v %v", r, err)
	}
	held := `navigator.locks.query().then((q) => q.held.map((l) => l.name).join(","))`
	if r, err = first.Eval(held, `e => String(e)`, time.Minute); err != nil || string(r.Value) != `"held"` {
		t.Fatalf("the first tab sees locks %s, %v; want the second tab's", r.Value, err)
	}
	second.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if r, err = first.Eval(held, `e => String(e)`, time.Minute); err != nil {
			t.Fatal(err)
		}
		if string(r.Value) == `""` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after closing the second tab its lock is still held: %s", r.Value)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
