package firefox

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"wasmllm/internal/testkit"
)

// TestTab starts Firefox, opens a page on 127.0.0.1 (a secure context, so
// navigator.gpu exists), evaluates, receives a channel's messages in order
// and the console, and finds a WebGPU adapter.
func TestTab(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Firefox")
	}
	_, err := os.Stat(Path())
	testkit.Need(t, Path() != "" && err == nil, "no Firefox (set WASMLLM_FIREFOX)")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><script>for (let i = 0; i < 50; i++) __out("m" + i); console.warn("hello"); window.pageReady = true;</script>`))
	}))
	defer srv.Close()
	var mu sync.Mutex
	var msgs, console []string
	tab, err := Start(context.Background(), Options{
		Channels:  []string{"__out"},
		OnMessage: func(ch, s string) { mu.Lock(); msgs = append(msgs, ch+":"+s); mu.Unlock() },
		OnConsole: func(level, text string) { mu.Lock(); console = append(console, level+":"+text); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	if err := tab.Open(srv.URL, time.Minute); err != nil {
		t.Fatal(err)
	}
	r, err := tab.Eval(`navigator.gpu.requestAdapter().then((a) => ({ok: !!a, f16: !!a && a.features.has("shader-f16")}))`, `e => String(e)`, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ OK, F16 bool }
	if !r.OK || json.Unmarshal(r.Value, &got) != nil || !got.OK {
		t.Fatalf("no WebGPU adapter: %+v %s", r, r.Error)
	}
	t.Logf("adapter: %+v", got)
	r, err = tab.Eval(`Promise.reject(new Error("boom"))`, `e => String(e.message)`, time.Minute)
	if err != nil || r.OK || string(r.Error) != `"boom"` {
		t.Fatalf("rejection: %+v, %v", r, err)
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) != 50 {
		t.Fatalf("%d channel messages, want 50: %q", len(msgs), msgs)
	}
	for i, m := range msgs {
		if want := "__out:m" + strconv.Itoa(i); m != want {
			t.Fatalf("message %d: %q, want %q", i, m, want)
		}
	}
	if len(console) == 0 || console[0] != "warn:hello" {
		t.Errorf("console %q, want warn:hello first", console)
	}
}
