package e2e

import (
	"fmt"
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
)

// TestChatPageDeviceLost crashes the GPU process while the page streams a
// reply on WebGPU: the reply shows the device_lost error, the page offers
// to reload the model, and after pressing the button (no page reload, no
// download) the same message gets the same reply as before the crash.
func TestChatPageDeviceLost(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: modelsDir(t)})
	b, crash := browsertest.NewCrashableBrowser(t)
	openPage(t, b, srv.URL+"/?model=stories260K&backend=webgpu")
	s := settings{Temperature: 0, TopP: 1, TopK: 0, MinP: 0, RepetitionPenalty: 1, MaxTokens: 8, Seed: 1}
	s.apply(t, b)
	typeMessage(t, b, "Once upon a time")
	want := waitReply(t, b, 1).Text

	s.MaxTokens = 200
	s.apply(t, b)
	typeMessage(t, b, " One day")
	if err := b.WaitFor(`wasmllmApp.chunks >= 2`, replyTimeout, nil); err != nil {
		t.Fatal(err)
	}
	crash()
	n := 2
	if r := waitEntry(t, b, n); r.Error == nil {
		// The reply ended before the crash reached it: the next one fails.
		t.Logf("reply %d finished before the loss (%s)", n, r.FinishReason)
		n++
		typeMessage(t, b, " The end")
	}
	r := waitEntry(t, b, n)
	if r.Error == nil || r.Error.Code != "device_lost" {
		t.Fatalf("reply %d after the crash: %+v, want a device_lost error", n, r)
	}
	var page struct {
		Error, Status, Button string
		ButtonHidden          bool
	}
	b.MustRun(`({Error: [...document.querySelectorAll("[data-testid=assistant]")].at(-1).querySelector(".error")?.textContent ?? "",
		Status: document.querySelector("[data-testid=status]").textContent + document.querySelector("[data-testid=status-detail]").textContent,
		Button: document.querySelector("[data-testid=load]").textContent, ButtonHidden: document.querySelector("[data-testid=load]").hidden})`, &page)
	t.Logf("after the crash: %+v", page)
	if !strings.Contains(page.Error, "device_lost") || !strings.HasPrefix(page.Status, "error") || page.ButtonHidden || page.Button != "Reload model" {
		t.Errorf("page after the crash %+v: want the error shown and a Reload model button", page)
	}
	screenshot(t, b, "device-lost.png")

	logged := len(srv.Log())
	if err := b.Click("[data-testid=load]"); err != nil {
		t.Fatal(err)
	}
	waitReady(t, b)
	for _, l := range srv.Log()[logged:] {
		if strings.Contains(l, "/models/") {
			t.Errorf("request during the reload: %s", l)
		}
	}
	var info struct {
		Backend string `json:"backend"`
		Load    struct {
			Reload       bool  `json:"reload"`
			NetworkBytes int64 `json:"network_bytes"`
		} `json:"load"`
	}
	b.MustRun(`wasmllmApp.info`, &info)
	if info.Backend != "webgpu" || !info.Load.Reload || info.Load.NetworkBytes != 0 {
		t.Errorf("info after the reload %+v", info)
	}
	if err := b.Click("[data-testid=new-chat]"); err != nil {
		t.Fatal(err)
	}
	s.MaxTokens = 8
	s.apply(t, b)
	typeMessage(t, b, "Once upon a time")
	if got := waitReply(t, b, n+1).Text; got != want {
		t.Errorf("after the reload %q, before the crash %q", got, want)
	}
}

// waitEntry waits for the n-th history entry (1-based), a reply or an error.
func waitEntry(t *testing.T, b *browsertest.Browser, n int) reply {
	t.Helper()
	var r reply
	if err := b.WaitFor(fmt.Sprintf(`wasmllmApp.history.length >= %d && wasmllmApp.history[%d]`, n, n-1), replyTimeout, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCPURankDies loads the CPU engine on 3 ranks (every weight split),
// then ends rank 2 as a crash does (its worker gone, marked dead): the next
// request fails with cpu_rank_failed naming rank 2, so does the one after
// (the model was unloaded), and after engine.reload() the same request
// gives the same greedy text as before, on 3 ranks again. Both browsers.
func TestCPURankDies(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: modelsDir(t)})
	for _, br := range []string{"chromium", "firefox"} {
		t.Run(br, func(t *testing.T) {
			b := browsertest.NewBrowser(t)
			if br == "firefox" {
				b = browsertest.NewFirefox(t)
			}
			b.Open(srv.URL + "/test.html")
			b.MustRun(pageHelpers, nil)
			loadEngine(t, b, `{model: "/models/stories260K/", backend: "cpu", cpuRanks: 3, cpuMinShardBytes: 1}`)
			type reply struct {
				Text, Code string
				Rank       int
			}
			ask := func() (r reply) {
				b.MustRun(`engine.completions.create({prompt: "Once upon a time", max_tokens: 8, temperature: 0, ignore_eos: true})
					.then((r) => ({Text: r.choices[0].text}), (e) => ({Code: e.code, Rank: e.details && e.details.rank || 0}))`, &r)
				return r
			}
			var ranks int
			b.MustRun(`engine.info.cpu_ranks`, &ranks)
			want := ask()
			if ranks != 3 || want.Code != "" || want.Text == "" {
				t.Fatalf("on %d ranks: %+v", ranks, want)
			}
			b.MustRun(`(() => {
				const ranks = [...engine._conn.ranks.values()];
				const r = ranks.find((s) => s.init.rank === 2);
				const ctrl = new Int32Array(r.init.ctrl);
				r.worker.terminate();
				Atomics.store(ctrl, 64 + 8 * 2 + 3, 1); // what rank.js does when its program ends
				return ranks.length;
			})()`, nil)
			for i := 0; i < 2; i++ {
				if got := ask(); got.Code != "cpu_rank_failed" || i == 0 && got.Rank != 2 {
					t.Fatalf("request %d after rank 2 died: %+v, want cpu_rank_failed of rank 2", i+1, got)
				}
			}
			b.MustRun(`engine.reload().then((i) => i.cpu_ranks)`, &ranks)
			if got := ask(); ranks != 3 || got != want {
				t.Fatalf("after reload on %d ranks: %+v, want %+v", ranks, got, want)
			}
		})
	}
}
