package e2e

import (
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit/browsertest"
)

// hostileReply is a model reply made to break out of the page: raw HTML
// that would run script if it were ever parsed, unsafe link targets, and
// Markdown that must still render.
const hostileReply = "<think>Plan: say <b>hi</b> & <script>window.pwned = 'think'</script></think>\n\n" +
	"# Heading <img src=x onerror=\"window.pwned = 'heading'\">\n" +
	"Hello <script>window.pwned = 'script'</script> world.\n" +
	"<img src=x onerror=\"window.pwned = 'img'\">\n\n" +
	"**bold** and *it* and `<code>` and [bad](javascript:window.pwned='link') and [data](data:text/html,<script>1</script>) and [good](https://example.com/a?b=1).\n\n" +
	"- item <iframe src=\"javascript:window.pwned='iframe'\"></iframe>\n" +
	"- two <svg onload=\"window.pwned='svg'\"></svg>\n\n" +
	"```html\n<script>window.pwned = 'fence'</script>\n```\n" +
	"> quote <a href=\"javascript:window.pwned='a'\">x</a>\n"

// mockWorker stands in for worker.js: it speaks the worker protocol (see
// web/worker.js) and streams hostileReply, so the test controls exactly
// what the "model" says.
const mockWorker = `"use strict";
const REPLY = ` + "`" + `%REPLY%` + "`" + `;
const post = (id, type, data) => self.postMessage({id, type, data});
self.onmessage = async (ev) => {
	const m = ev.data || {};
	if (m.op === "init" || m.op === "unload") return post(m.id, "result", {});
	if (m.op === "load") {
		post(m.id, "progress", {bytes: 10, total: 20, shards_done: 0, shards_total: 1, rate: 10});
		post(m.id, "progress", {bytes: 20, total: 20, shards_done: 1, shards_total: 1, rate: 20});
		return post(m.id, "result", {backend: "webgpu", notice: "", adapter: {vendor: "mock"}, context_length: 4096,
			model: {name: "mock", has_tokenizer: true, has_chat_template: true}, load: {ms: 1, network_bytes: 20, cached_bytes: 0}});
	}
	if (m.op === "chat") {
		const base = {id: "chatcmpl-mock", object: "chat.completion.chunk", created: 0, model: "mock"};
		post(m.id, "chunk", {...base, choices: [{index: 0, delta: {role: "assistant", content: ""}, finish_reason: null, logprobs: null}]});
		for (let i = 0; i < REPLY.length; i += 7) {
			post(m.id, "chunk", {...base, choices: [{index: 0, delta: {content: REPLY.slice(i, i + 7)}, finish_reason: null, logprobs: null}]});
			await new Promise((r) => setTimeout(r, 2));
		}
		const usage = {prompt_tokens: 3, completion_tokens: 9, total_tokens: 12, prompt_tokens_details: {cached_tokens: 0}};
		const timings = {prefill_tokens: 3, prefill_ms: 1, prefill_tokens_per_s: 3000, decode_tokens: 9, decode_ms: 9, decode_tokens_per_s: 1000};
		post(m.id, "chunk", {...base, choices: [{index: 0, delta: {}, finish_reason: "stop", logprobs: null}], usage, timings});
		return post(m.id, "result", {response: null, timings});
	}
};
`

// TestHostileOutput checks that model output is never parsed as HTML: a
// reply holding <script>, <img onerror>, <iframe>, <svg onload> and
// javascript: links runs nothing and creates none of those elements, while
// its Markdown still renders and its thinking is folded.
func TestHostileOutput(t *testing.T) {
	skipShort(t)
	reply := strings.ReplaceAll(hostileReply, "`", "\\`")
	web := browsertest.WebDir(t, map[string]string{"worker.js": strings.Replace(mockWorker, "%REPLY%", reply, 1)})
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Web: web})
	b := browsertest.NewBrowser(t)
	if err := b.Viewport(1000, 1100, 1, false); err != nil {
		t.Fatal(err)
	}
	openPage(t, b, srv.URL+"/?model=mock")
	typeMessage(t, b, `<img src=x onerror="window.pwned='user'">`)
	r := waitReply(t, b, 1)
	if r.Text != hostileReply {
		t.Fatalf("reply %q, want %q", r.Text, hostileReply)
	}
	time.Sleep(500 * time.Millisecond) // an image error would fire by now

	var got struct {
		Pwned       any
		Dangerous   []string
		OnAttrs     []string
		Links       []string
		Answer      string
		User        string
		Thinking    string
		ThinkOpen   bool
		Summary     string
		Heading     string
		Strong, Em  string
		Code, Pre   string
		Quote       string
		Items       int
		ScriptCount int
	}
	b.MustRun(`(() => { const box = document.getElementById("messages"), a = box.querySelector("[data-testid=assistant]");
		const q = (s) => a.querySelector(s), txt = (s) => (q(s) || {}).textContent;
		return {
			Pwned: window.pwned === undefined ? null : window.pwned,
			Dangerous: [...box.querySelectorAll("script, img, iframe, svg, object, embed, style, link, meta, form, input")].map((e) => e.outerHTML),
			OnAttrs: [...box.querySelectorAll("*")].flatMap((e) => [...e.attributes].filter((x) => /^on/i.test(x.name)).map((x) => e.tagName + " " + x.name)),
			Links: [...box.querySelectorAll("a")].map((e) => e.getAttribute("href")),
			Answer: txt(".answer"), User: box.querySelector("[data-testid=user] .body").textContent,
			Thinking: txt(".thinking-text"), ThinkOpen: q("details.thinking").open, Summary: txt("details.thinking summary"),
			Heading: txt("h3"), Strong: txt("strong"), Em: txt("em"), Code: txt("p code"), Pre: txt("pre code"),
			Quote: txt("blockquote"), Items: a.querySelectorAll("ul li").length,
			ScriptCount: document.scripts.length,
		}; })()`, &got)
	if got.Pwned != nil {
		t.Errorf("model output ran script: window.pwned = %v", got.Pwned)
	}
	if len(got.Dangerous) > 0 || len(got.OnAttrs) > 0 {
		t.Errorf("model output became elements %v, handlers %v", got.Dangerous, got.OnAttrs)
	}
	if len(got.Links) != 1 || got.Links[0] != "https://example.com/a?b=1" {
		t.Errorf("links %q, want only the https one", got.Links)
	}
	for _, s := range []string{"<script>window.pwned = 'script'</script>", `<img src=x onerror="window.pwned = 'img'">`, "<iframe"} {
		if !strings.Contains(got.Answer, s) {
			t.Errorf("the answer does not show %q as text: %q", s, got.Answer)
		}
	}
	if got.User != `<img src=x onerror="window.pwned='user'">` {
		t.Errorf("user message shown as %q", got.User)
	}
	if got.ThinkOpen || got.Summary != "Thought" || !strings.Contains(got.Thinking, "<script>window.pwned = 'think'</script>") || strings.Contains(got.Answer, "Plan:") {
		t.Errorf("thinking: open %v, summary %q, text %q; answer %q", got.ThinkOpen, got.Summary, got.Thinking, got.Answer)
	}
	want := map[string]string{
		"heading": `Heading <img src=x onerror="window.pwned = 'heading'">`, "strong": "bold", "em": "it", "code": "<code>",
		"pre": "<script>window.pwned = 'fence'</script>", "quote": `quote <a href="javascript:window.pwned='a'">x</a>`,
	}
	for k, v := range map[string]string{"heading": got.Heading, "strong": got.Strong, "em": got.Em, "code": got.Code, "pre": got.Pre, "quote": got.Quote} {
		if v != want[k] {
			t.Errorf("%s: %q, want %q", k, v, want[k])
		}
	}
	if got.Items != 2 {
		t.Errorf("%d list items, want 2", got.Items)
	}
	if got.ScriptCount != 1 {
		t.Errorf("the document has %d scripts, want only app.js", got.ScriptCount)
	}
	screenshot(t, b, "hostile-output.png")
}
