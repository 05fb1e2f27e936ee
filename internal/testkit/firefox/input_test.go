package firefox

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"wasmllm/internal/testkit"
)

// TestInput: Click and Keys reach the page as trusted events: a button
// below the fold is scrolled to and clicked, text is typed into the
// focused input, Enter arrives as "Enter", and Shift is held for the keys
// typed with it.
func TestInput(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Firefox")
	}
	_, err := os.Stat(Path())
	testkit.Need(t, Path() != "" && err == nil, "no Firefox (set WASMLLM_FIREFOX)")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><input id=i><div style="height:3000px"></div><button id=b>go</button><script>
			window.log = [];
			document.getElementById("b").addEventListener("click", (e) => log.push("click:" + e.isTrusted));
			document.getElementById("i").addEventListener("keydown", (e) => log.push(e.key + (e.shiftKey ? "+shift" : "") + ":" + e.isTrusted));
			window.pageReady = true;</script>`))
	}))
	defer srv.Close()
	tab, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	if err := tab.Open(srv.URL, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := tab.Click("#b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := tab.Click("#nothing", time.Minute); err == nil {
		t.Error("clicking a selector that matches nothing: no error")
	}
	if _, err := tab.Eval(`document.getElementById("i").focus()`, `e => String(e)`, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := tab.Keys("hi\r", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := tab.Keys("\r", []string{KeyShift}, time.Minute); err != nil {
		t.Fatal(err)
	}
	r, err := tab.Eval(`({log: window.log, value: document.getElementById("i").value})`, `e => String(e)`, time.Minute)
	if err != nil || !r.OK {
		t.Fatalf("%+v %v", r, err)
	}
	var got struct {
		Log   []string
		Value string
	}
	if err := json.Unmarshal(r.Value, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"click:true", "h:true", "i:true", "Enter:true", "Shift+shift:true", "Enter+shift:true"}
	if len(got.Log) != len(want) || got.Value != "hi" {
		t.Fatalf("events %q, value %q; want %q, %q", got.Log, got.Value, want, "hi")
	}
	for i := range want {
		if got.Log[i] != want[i] {
			t.Errorf("event %d: %q, want %q (all: %q)", i, got.Log[i], want[i], got.Log)
		}
	}
}
