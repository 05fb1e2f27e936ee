package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit/browsertest"
)

// These tests open several tabs of one origin in one browser (NewTab: one
// profile) and drive createEngine({shared: true}): one engine per origin
// and model, in a SharedWorker (web/shared-worker.js), shared by the tabs.

// sharedHelpers are defined in each tab after pageHelpers: startChat runs
// a streamed chat request on window.engine (or window[engineName]) into
// window.reqs[name] and resolves once it has its first chunk (or has
// ended); held starts a request whose logits processor never settles, so
// it holds the engine until it is cancelled.
const sharedHelpers = `(() => {
window.reqs = {};
const now = () => performance.timeOrigin + performance.now();
window.startChat = (name, req, opts = {}) => {
	const rec = window.reqs[name] = {chunks: 0, text: "", finish: "", usage: null, error: "", done: false, sent: now(), first: 0, end: 0};
	let firstSeen;
	const first = new Promise((r) => { firstSeen = r; });
	const e = window[opts.engine || "engine"];
	const ac = new AbortController();
	rec.abort = () => ac.abort();
	(async () => {
		try {
			const s = await e.chat.completions.create({...req, stream: true, stream_options: {include_usage: true}}, {signal: ac.signal});
			for await (const c of s) {
				if (c.usage) rec.usage = c.usage;
				const ch = c.choices[0];
				if (!ch) continue;
				rec.chunks++;
				if (!rec.first) { rec.first = now(); firstSeen(); }
				rec.text += (ch.delta && ch.delta.content) || "";
				if (ch.finish_reason) rec.finish = ch.finish_reason;
				if (opts.stopAfter && rec.chunks >= opts.stopAfter) break;
			}
		} catch (err) {
			rec.error = err.code || String(err);
		}
		rec.done = true;
		rec.end = now();
		firstSeen();
	})();
	return opts.wait === false ? true : first.then(() => true);
};
window.startPlain = (name, req) => {
	const rec = window.reqs[name] = {sent: now(), end: 0, done: false, finish: "", tokens: 0, error: ""};
	engine.chat.completions.create(req).then((r) => { rec.finish = r.choices[0].finish_reason; rec.tokens = r.usage.completion_tokens; },
		(err) => { rec.error = err.code || String(err); }).finally(() => { rec.done = true; rec.end = now(); });
	return true;
};
window.held = false;
window.startHeld = (req) => {
	engine.chat.completions.create({...req, logits_processors: [() => { window.held = true; return new Promise(() => {}); }]}).catch(() => {});
	return true;
};
window.rec = (name) => { const r = {...window.reqs[name]}; delete r.abort; return r; };
return true;
})()`

// chatRec is a request's record (window.reqs[name]).
type chatRec struct {
	Chunks int     `json:"chunks"`
	Text   string  `json:"text"`
	Finish string  `json:"finish"`
	Error  string  `json:"error"`
	Done   bool    `json:"done"`
	Sent   float64 `json:"sent"`
	First  float64 `json:"first"`
	End    float64 `json:"end"`
	Tokens int     `json:"tokens"`
	Usage  *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// sharedInfo is engine.info.shared.
type sharedInfo struct {
	Mode    string `json:"mode"`
	Reason  string `json:"reason"`
	Reused  bool   `json:"reused"`
	Clients int    `json:"clients"`
}

type loaded struct {
	Backend string     `json:"backend"`
	Notice  string     `json:"notice"`
	Shared  sharedInfo `json:"shared"`
	MS      float64    `json:"ms"`
	Network int64      `json:"network"`
}

// openTab opens a new tab of b on the test page, with the helpers.
func openTab(t *testing.T, b *browsertest.Browser, url string) *browsertest.Browser {
	t.Helper()
	tab := b.NewTab()
	tab.Open(url + "/test.html")
	tab.MustRun(pageHelpers, nil)
	tab.MustRun(sharedHelpers, nil)
	return tab
}

// loadIn creates window[name] in tab with createEngine(opts) and returns
// its info and how long createEngine took.
func loadIn(t *testing.T, tab *browsertest.Browser, name, opts string) loaded {
	t.Helper()
	var l loaded
	if err := tab.Run(`(async () => { const t0 = performance.now(); const e = await wasmllm.createEngine(`+opts+`);
		window.`+name+` = e; return {backend: e.info.backend, notice: e.info.notice, shared: e.info.shared, ms: performance.now() - t0, network: e.info.load.network_bytes}; })()`, &l); err != nil {
		t.Fatalf("createEngine(%s): %v", opts, err)
	}
	return l
}

// waitRec waits until window.reqs[name] is done and returns it.
func waitRec(t *testing.T, tab *browsertest.Browser, name string) chatRec {
	t.Helper()
	var r chatRec
	if err := tab.WaitFor(`window.reqs["`+name+`"] && window.reqs["`+name+`"].done && rec("`+name+`")`, replyTimeout, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// full checks that a streamed request ran to its max_tokens, untouched.
func full(t *testing.T, what string, r chatRec, tokens int) {
	t.Helper()
	if r.Error != "" || r.Finish != "length" || r.Usage == nil || r.Usage.CompletionTokens != tokens {
		t.Errorf("%s: %+v; want %d tokens, finish_reason length", what, r, tokens)
	}
}

const sharedChat = `{messages: [{role: "user", content: "Tell me a story."}], max_tokens: %d, temperature: 0, ignore_eos: true}`

func TestSharedEngine(t *testing.T) {
	skipShort(t)
	sharedEngine(t, func(t testing.TB) *browsertest.Browser { return browsertest.NewBrowser(t) })
}

func TestFirefoxSharedEngine(t *testing.T) {
	skipShort(t)
	sharedEngine(t, func(t testing.TB) *browsertest.Browser { return browsertest.NewFirefox(t) })
}

// sharedEngine: two tabs of one origin share one engine: one load (the
// server sees the shards and the wasm once; the second createEngine joins
// in a fraction of the first's time), both stream chats, cancelling in one
// leaves the other's stream to finish, requests alternate between tabs,
// another model in one tab leaves the other's stream alone, a tab that
// closes or navigates away cancels only its own (held) request, and the
// engine unloads when the last tab is gone or after the idle time.
func sharedEngine(t *testing.T, newBrowser func(testing.TB) *browsertest.Browser) {
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: compatModels(t)})
	home := newBrowser(t) // the first tab stays on a page of its own: closing it ends the browser
	home.Open(srv.URL + "/test.html")
	shards := func() int { return len(srv.Requests("/models/tiny-qwen3/shard-")) }
	wasm := func() int { return len(srv.Requests("/wasmllm.wasm")) }
	// cache: false, so that every load of the shards is a request the
	// server sees.
	const opts = `{model: "/models/tiny-qwen3/", backend: "webgpu", shared: true, cache: false, sharedIdleMs: 300}`

	// One load.
	t1, t2 := openTab(t, home, srv.URL), openTab(t, home, srv.URL)
	var bad string
	t1.MustRun(`codeOf(wasmllm.createEngine({model: "/models/tiny-qwen3/", shared: true, sharedIdleMs: -1}))`, &bad)
	if !strings.HasPrefix(bad, "bad_request:") || !strings.HasSuffix(bad, "[sharedIdleMs]") {
		t.Errorf("sharedIdleMs -1: %s", bad)
	}
	first := loadIn(t, t1, "engine", opts)
	if first.Shared.Mode != "shared-worker" || first.Shared.Reused || first.Backend != "webgpu" {
		t.Fatalf("the first tab's engine: %+v", first)
	}
	shards0, wasm0 := shards(), wasm()
	second := loadIn(t, t2, "engine", opts)
	if second.Shared.Mode != "shared-worker" || !second.Shared.Reused || second.Shared.Clients != 2 {
		t.Fatalf("the second tab's engine: %+v", second)
	}
	if shards() != shards0 || wasm() != wasm0 || shards0 == 0 {
		t.Errorf("the second tab fetched: shards %d -> %d, wasm %d -> %d", shards0, shards(), wasm0, wasm())
	}
	t.Logf("first tab ready in %.0f ms (%d shard fetches); second in %.0f ms, nothing fetched", first.MS, shards0, second.MS)
	if second.MS > first.MS/2 {
		t.Errorf("the second tab took %.0f ms, the first %.0f ms: it did not join the loaded engine", second.MS, first.MS)
	}

	// Both stream; one breaks off after 3 chunks (its request is
	// cancelled), the other streams to the end. Then the other way round,
	// cancelled while queued by its AbortSignal.
	const long = 120
	t1.MustRun(`startChat("a", `+fmt.Sprintf(sharedChat, long)+`, {stopAfter: 3})`, nil)
	t2.MustRun(`startChat("b", `+fmt.Sprintf(sharedChat, long)+`, {wait: false})`, nil)
	a, b := waitRec(t, t1, "a"), waitRec(t, t2, "b")
	full(t, "tab 2's stream while tab 1 broke off its own", b, long)
	if a.Chunks != 3 || a.Error != "" {
		t.Errorf("tab 1 left its stream after 3 chunks: %+v", a)
	}
	t2.MustRun(`startChat("b2", `+fmt.Sprintf(sharedChat, long)+`)`, nil)
	t1.MustRun(`startChat("a2", `+fmt.Sprintf(sharedChat, long)+`, {wait: false})`, nil)
	t1.MustRun(`reqs.a2.abort()`, nil)
	a2, b2 := waitRec(t, t1, "a2"), waitRec(t, t2, "b2")
	full(t, "tab 2's stream while tab 1 aborted its queued one", b2, long)
	if a2.Error != "aborted" || a2.Chunks != 0 {
		t.Errorf("tab 1's aborted request: %+v", a2)
	}

	// Fairness: tab 1 sends three requests, then tab 2 one; tab 2's runs
	// second (round robin), not after tab 1's three (first come, first served).
	const mid = 40
	t1.MustRun(`startChat("f1", `+fmt.Sprintf(sharedChat, mid)+`)`, nil)
	t1.MustRun(`startPlain("f2", `+fmt.Sprintf(sharedChat, mid)+`) && startPlain("f3", `+fmt.Sprintf(sharedChat, mid)+`)`, nil)
	t2.MustRun(`startPlain("g1", `+fmt.Sprintf(sharedChat, mid)+`)`, nil)
	f1, f2, f3, g1 := waitRec(t, t1, "f1"), waitRec(t, t1, "f2"), waitRec(t, t1, "f3"), waitRec(t, t2, "g1")
	for _, r := range []chatRec{f2, f3, g1} {
		if r.Error != "" || r.Tokens != mid {
			t.Errorf("fairness: a request ended %+v", r)
		}
	}
	full(t, "fairness: tab 1's stream", f1, mid)
	if !(f1.End <= g1.End && g1.End <= f2.End && f2.End <= f3.End) {
		t.Errorf("order of the ends (ms): tab 1's %.0f %.0f %.0f, tab 2's %.0f; want tab 2's second", f1.End, f2.End, f3.End, g1.End)
	}

	// Another model in tab 2 while tab 1 streams: its own engine (another
	// SharedWorker); tab 1's stream is untouched.
	t1.MustRun(`startChat("c", `+fmt.Sprintf(sharedChat, long)+`)`, nil)
	other := loadIn(t, t2, "engine2", `{model: "/models/stories260K/", backend: "webgpu", shared: true, cache: false, sharedIdleMs: 300}`)
	if other.Shared.Mode != "shared-worker" || other.Shared.Reused {
		t.Errorf("tab 2's other model: %+v", other)
	}
	var story string
	t2.MustRun(`engine2.completions.create({prompt: "Once upon a time", max_tokens: 8, temperature: 0}).then((r) => r.choices[0].text)`, &story)
	full(t, "tab 1's stream while tab 2 loaded another model", waitRec(t, t1, "c"), long)
	t2.MustRun(`engine2.unload()`, nil)

	// A tab that closes cancels its own request, never another's: tab 2
	// holds the engine with a request whose logits processor never settles;
	// tab 1's request, queued behind it, runs once tab 2 is closed.
	t2.MustRun(`startHeld(`+fmt.Sprintf(sharedChat, long)+`)`, nil)
	if err := t2.WaitFor(`window.held`, replyTimeout, nil); err != nil {
		t.Fatal(err)
	}
	t1.MustRun(`startChat("d", `+fmt.Sprintf(sharedChat, mid)+`, {wait: false})`, nil)
	time.Sleep(300 * time.Millisecond)
	var d chatRec
	t1.MustRun(`rec("d")`, &d)
	if d.Chunks != 0 || d.Done {
		t.Fatalf("tab 1's request ran while tab 2's held the engine: %+v", d)
	}
	t2.Close()
	full(t, "tab 1's request after tab 2 closed", waitRec(t, t1, "d"), mid)

	// A tab that navigates away: the same.
	t3 := openTab(t, home, srv.URL)
	if l := loadIn(t, t3, "engine", opts); !l.Shared.Reused {
		t.Errorf("tab 3 did not join: %+v", l)
	}
	t3.MustRun(`startHeld(`+fmt.Sprintf(sharedChat, long)+`)`, nil)
	if err := t3.WaitFor(`window.held`, replyTimeout, nil); err != nil {
		t.Fatal(err)
	}
	t1.MustRun(`startChat("e", `+fmt.Sprintf(sharedChat, mid)+`, {wait: false})`, nil)
	t3.Open(srv.URL + "/test.html?away")
	full(t, "tab 1's request after tab 3 navigated away", waitRec(t, t1, "e"), mid)

	// The last tab gone: the engine unloads; a new tab loads it again.
	t1.Close()
	t4 := openTab(t, home, srv.URL)
	before := shards()
	again := loadIn(t, t4, "engine", opts)
	if again.Shared.Reused || shards() == before {
		t.Errorf("after the last tab closed, a new tab's engine: %+v, shard fetches %d -> %d; want a new load", again, before, shards())
	}

	// Idle time: a tab that unloads and comes back within it joins the
	// engine still loaded; after it, the engine is gone.
	t4.MustRun(`engine.unload()`, nil)
	keep := loadIn(t, t4, "engine", `{model: "/models/tiny-qwen3/", backend: "webgpu", shared: true, cache: false, sharedIdleMs: 0}`)
	if !keep.Shared.Reused {
		t.Errorf("back within sharedIdleMs (300 ms): %+v; want the loaded engine", keep)
	}
	t4.MustRun(`engine.unload()`, nil)
	time.Sleep(200 * time.Millisecond)
	before = shards()
	gone := loadIn(t, t4, "engine", opts)
	if gone.Shared.Reused || shards() == before {
		t.Errorf("after the idle time (0 ms): %+v, shard fetches %d -> %d; want a new load", gone, before, shards())
	}
	var text string
	t4.MustRun(`engine.chat.completions.create(`+fmt.Sprintf(sharedChat, 4)+`).then((r) => r.choices[0].finish_reason)`, &text)
	if !strings.Contains(text, "length") {
		t.Errorf("the engine loaded again answers %q", text)
	}

	// reload(another model) moves the tab to that model's shared engine.
	var moved struct {
		Shared sharedInfo `json:"shared"`
		Name   string     `json:"name"`
		Text   string     `json:"text"`
	}
	t4.MustRun(`(async () => { const info = await engine.reload("/models/stories260K/");
		const r = await engine.completions.create({prompt: "Once upon a time", max_tokens: 4, temperature: 0});
		return {shared: info.shared, name: info.model.url, text: r.choices[0].finish_reason}; })()`, &moved)
	if moved.Shared.Mode != "shared-worker" || !strings.HasSuffix(moved.Name, "/models/stories260K/") || moved.Text != "length" {
		t.Errorf("reload to another model: %+v", moved)
	}
}

// noGPUWorker is a folder beside the web files whose worker.js and
// shared-worker.js start the real ones, the SharedWorker with
// navigator.gpu hidden: a browser that gives WebGPU to pages and dedicated
// workers but not to SharedWorkers.
var noGPUWorker = map[string]string{
	"worker.js": `self.__wasmllmBase = new URL("../", self.location.href).href;
importScripts(self.__wasmllmBase + "worker.js");
`,
	"shared-worker.js": `Object.defineProperty(self.navigator, "gpu", {value: undefined});
self.__wasmllmBase = new URL("../", self.location.href).href;
importScripts(self.__wasmllmBase + "shared-worker.js");
`,
}

// TestSharedEngineFallback: where the SharedWorker lacks what the engine
// needs, createEngine({shared: true}) still works, and engine.info.shared
// says what it did and why. Headless Chromium and Firefox here both give a
// SharedWorker WebGPU (Firefox 153's dom.webgpu.workers.enabled no longer
// turns it off), so the lacks are made: a SharedWorker whose navigator has
// no gpu while the page has one (each tab runs its own engine, on WebGPU:
// "per-tab"), a page with no SharedWorker (Chrome on Android has none:
// "per-tab"), and a browser with no WebGPU at all (Chromium without it,
// Firefox as it ships on Linux: the CPU engine runs in the SharedWorker,
// shared, on one rank).
func TestSharedEngineFallback(t *testing.T) {
	skipShort(t)
	web := browsertest.WebDir(t, nil)
	if err := os.MkdirAll(filepath.Join(web, "nogpu"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range noGPUWorker {
		if err := os.WriteFile(filepath.Join(web, "nogpu", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: compatModels(t), Web: web})
	shards := func() int { return len(srv.Requests("/models/tiny-qwen3/shard-")) }
	firefox := func(t testing.TB) *browsertest.Browser { return browsertest.NewFirefox(t) }
	chromium := func(t testing.TB) *browsertest.Browser { return browsertest.NewBrowser(t) }
	for _, c := range []struct {
		name    string
		browser func(testing.TB) *browsertest.Browser
		before  string // run in each tab before createEngine
		opts    string // more createEngine options
		mode    string
		reason  string
		backend string
	}{
		{"firefox-sharedworker-without-webgpu", firefox, "", `backend: "webgpu", workerURL: "/nogpu/worker.js"`,
			"per-tab", "gives a SharedWorker no WebGPU adapter", "webgpu"},
		{"chromium-no-sharedworker", chromium, "delete window.SharedWorker", `backend: "webgpu"`,
			"per-tab", "no SharedWorker", "webgpu"},
		{"chromium-no-webgpu", func(t testing.TB) *browsertest.Browser { return browsertest.NewBrowser(t, browsertest.NoWebGPU) }, "", ``,
			"shared-worker", "the CPU engine runs in the SharedWorker", "cpu"},
		// Firefox on Linux ships without WebGPU by default.
		{"firefox-no-webgpu", func(t testing.TB) *browsertest.Browser {
			return browsertest.NewFirefoxPrefs(t, map[string]any{"dom.webgpu.enabled": false})
		}, "", ``, "shared-worker", "the CPU engine runs in the SharedWorker", "cpu"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := c.browser(t)
			home.Open(srv.URL + "/test.html")
			t1, t2 := openTab(t, home, srv.URL), openTab(t, home, srv.URL)
			before := shards()
			o := `{model: "/models/tiny-qwen3/", shared: true, cache: false, sharedIdleMs: 300, ` + c.opts + `}`
			var l [2]loaded
			for i, tab := range []*browsertest.Browser{t1, t2} {
				if c.before != "" {
					tab.MustRun(c.before, nil)
				}
				l[i] = loadIn(t, tab, "engine", o)
				if l[i].Shared.Mode != c.mode || !strings.Contains(l[i].Shared.Reason, c.reason) || l[i].Backend != c.backend {
					t.Errorf("tab %d: %+v; want mode %s, backend %s, a reason with %q", i+1, l[i], c.mode, c.backend, c.reason)
				}
			}
			t.Logf("%s: %q; tab 2 ready in %.0f ms", c.mode, l[1].Shared.Reason, l[1].MS)
			perTab := c.mode == "per-tab"
			if loads := shards() - before; perTab != (loads == 2) || l[1].Shared.Reused == perTab {
				t.Errorf("%d loads of the shards, tab 2 reused %v", loads, l[1].Shared.Reused)
			}
			// Both stream; cancelling in one leaves the other's to finish.
			const long = 60
			t1.MustRun(`startChat("a", `+fmt.Sprintf(sharedChat, long)+`, {stopAfter: 3})`, nil)
			t2.MustRun(`startChat("b", `+fmt.Sprintf(sharedChat, long)+`, {wait: false})`, nil)
			a, b := waitRec(t, t1, "a"), waitRec(t, t2, "b")
			full(t, "tab 2's stream while tab 1 broke off its own", b, long)
			if a.Chunks != 3 || a.Error != "" {
				t.Errorf("tab 1 left its stream after 3 chunks: %+v", a)
			}
		})
	}
}
