package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit/browsertest"
)

// The Markdown renderer (web/markdown.js) runs on the page's main thread
// over untrusted model output, re-rendered while a reply streams. These
// tests pin the vendored library, feed the renderer a corpus of XSS
// payloads, and check that inputs which used to freeze the tab render in
// bounded time, incrementally, to the same DOM as a one-shot render.

// markdownPage imports the renderer and chat.js, as the chat page does.
const markdownPage = `<!doctype html>
<meta charset="utf-8">
<title>markdown test page</title>
<link rel="stylesheet" href="styles.css">
<ul id="messages"></ul>
<script type="module">
import * as md from "./markdown.js";
import * as chat from "./chat.js";
window.md = md;
window.chat = chat;
window.pageReady = true;
</script>
`

// openMarkdownPage serves the web folder and opens markdownPage.
func openMarkdownPage(t *testing.T) *browsertest.Browser {
	t.Helper()
	skipShort(t)
	web := browsertest.WebDir(t, map[string]string{"md.html": markdownPage})
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Web: web})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/md.html")
	return b
}

// TestMarkdownVendoredLibrary checks that web/vendor/markdown-it holds the
// release its README.md names: the file's sha256 is the one recorded
// there, and the file's banner names the recorded version.
func TestMarkdownVendoredLibrary(t *testing.T) {
	dir := browsertest.RepoFile("web/vendor/markdown-it")
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) string {
		sc := bufio.NewScanner(strings.NewReader(string(readme)))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "- "+name+": "); ok {
				return strings.Trim(v, "` ")
			}
		}
		t.Fatalf("README.md has no %q line", "- "+name+": ")
		return ""
	}
	version, sum := field("version"), field("sha256 of dist/markdown-it.min.js")
	if !regexp.MustCompile(`^14\.\d+\.\d+$`).MatchString(version) {
		t.Errorf("version %q, want a 14.x release", version)
	}
	if !strings.HasPrefix(field("npm integrity"), "sha512-") {
		t.Errorf("npm integrity %q is not an sha512 SRI string", field("npm integrity"))
	}
	data, err := os.ReadFile(filepath.Join(dir, "markdown-it.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != sum {
		t.Errorf("markdown-it.min.js has sha256 %x, README.md records %s", got, sum)
	}
	if banner := "/*! markdown-it " + version + " "; !strings.HasPrefix(string(data), banner) {
		t.Errorf("markdown-it.min.js does not start with %q", banner)
	}
	if _, err := os.Stat(filepath.Join(dir, "LICENSE")); err != nil {
		t.Error(err)
	}
}

// xssPayloads are model replies made to run script, load something, or
// leave a dangerous element or link behind. Each one that ran would set
// window.pwned (or parent.pwned).
var xssPayloads = []string{
	// script elements
	`<script>window.pwned=1</script>`,
	`<SCRIPT SRC=http://127.0.0.1:9/x.js></SCRIPT>`,
	`<script>/*</script><script>*/window.pwned=3</script>`,
	`<scr<script>ipt>window.pwned=4</script>`,
	`<xss onafterscriptexecute=window.pwned=5><script>1</script>`,
	"\\<script>window.pwned=6</script>",
	`&lt;script&gt;window.pwned=7&lt;/script&gt;`,
	`＜script＞window.pwned=8＜/script＞`,
	`\u003cscript\u003ewindow.pwned=9\u003c/script\u003e`,
	// event handlers
	`<img src=x onerror=window.pwned=10>`,
	`<IMG SRC=x OnErRoR="window.pwned=11">`,
	`<img src="x" onerror="&#119;indow.pwned=12">`,
	`<img/src/onerror=window.pwned=13>`,
	`<img src=x onerror=window.pwned=14//`,
	`<svg onload=window.pwned=15>`,
	`<svg/onload=window.pwned=16>`,
	`<svg><script>window.pwned=17</script></svg>`,
	`<svg><animate onbegin=window.pwned=18 attributeName=x dur=1s>`,
	`<body onload=window.pwned=19>`,
	`<iframe src="javascript:window.pwned=20"></iframe>`,
	`<iframe srcdoc="<script>parent.pwned=21</script>"></iframe>`,
	`<details open ontoggle=window.pwned=22>`,
	`<video><source onerror="window.pwned=23"></video>`,
	`<video src=x onerror=window.pwned=24>`,
	`<audio src=x onerror=window.pwned=25>`,
	`<marquee onstart=window.pwned=26>x</marquee>`,
	`<input autofocus onfocus=window.pwned=27>`,
	`<object data="javascript:window.pwned=28">`,
	`<embed src="javascript:window.pwned=29">`,
	`<isindex type=image src=1 onerror=window.pwned=30>`,
	`<a href="http://example.com" onclick="window.pwned=31">x</a>`,
	// inline links with bad schemes
	`[x](javascript:window.pwned=32)`,
	`[x](JaVaScRiPt:window.pwned=33)`,
	`[x](javascript&#58;window.pwned=34)`,
	`[x](jav&#x09;ascript:window.pwned=35)`,
	`[x](&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;window.pwned=36)`,
	`[x](&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3A;window.pwned=37)`,
	`[x](javas&#99;ript:window.pwned=38)`,
	`[x](  javascript:window.pwned=39  )`,
	`[x](<javascript:window.pwned=40>)`,
	"[x](java\nscript:window.pwned=41)",
	"[x](java\tscript:window.pwned=42)",
	"[x](<java\tscript:window.pwned=43>)",
	`[x](javascript://%0Awindow.pwned=44)`,
	`[x](vbscript:msgbox(45))`,
	`[x](VBScript:msgbox(46))`,
	`[x](data:text/html;base64,PHNjcmlwdD5wYXJlbnQucHduZWQ9NDc8L3NjcmlwdD4=)`,
	`[x](DATA:text/html,<script>parent.pwned=48</script>)`,
	`[x](file:///etc/passwd)`,
	"[x](java\u0000script:window.pwned=50)",
	"[x](\u200bjavascript:window.pwned=51)",
	"[x](\u0001javascript:window.pwned=52)",
	`[x](ｊａｖａｓｃｒｉｐｔ:window.pwned=53)`,
	`[x](javascript＃:window.pwned=54)`,
	`[x](//evil.example/x)`,
	`[x](/relative?x=55)`,
	`[x](https://example.com/"onmouseover="window.pwned=56)`,
	`[x](https://example.com "<script>window.pwned=57</script>")`,
	`[<img src=x onerror=window.pwned=58>](https://example.com)`,
	// reference-style links
	"[x]: javascript:window.pwned=59\n\n[x]",
	"[x][y]\n\n[y]: JAVASCRIPT:window.pwned=60",
	"[x]\n\n[x]: <javascript:window.pwned=61> \"title\"",
	"[x]: jav&#x61;script:window.pwned=62\n\n[x]",
	"[x]: data:text/html,<script>parent.pwned=63</script>\n\n[x][]",
	// autolinks
	`<javascript:window.pwned=64>`,
	`<JAVASCRIPT:window.pwned=65>`,
	`<vbscript:msgbox(66)>`,
	`<data:text/html,<script>parent.pwned=67</script>>`,
	`<http://example.com/"onmouseover="window.pwned=68>`,
	`<mailto:javascript:window.pwned=69>`,
	// raw <a href>
	`<a href="javascript:window.pwned=70">x</a>`,
	`<a href=javascript&colon;window.pwned=71>x</a>`,
	`<a href="&#x6A;avascript:window.pwned=72">x</a>`,
	"<a href=\"javas\tcript:window.pwned=73\">x</a>",
	// Markdown images
	`![x](javascript:window.pwned=74)`,
	`![x](x "onerror=window.pwned=75")`,
	`![x](https://example.com/i.png "\" onerror=\"window.pwned=76")`,
	`![x" onerror="window.pwned=77](https://example.com/i.png)`,
	"![x][i]\n\n[i]: data:image/svg+xml,<svg onload=parent.pwned=78>",
	`![x](data:image/png;base64,iVBORw0KGgo=)`,
	`![<img src=x onerror=window.pwned=80>](https://example.com/i.png)`,
	// comments, CDATA, style, meta, base, form
	`<!-- <script>window.pwned=81</script> -->`,
	`<!--><img src=x onerror=window.pwned=82>-->`,
	`<![CDATA[<script>window.pwned=83</script>]]>`,
	`<style>*{background:url(javascript:window.pwned=84)}</style>`,
	`<div style="background:url(javascript:window.pwned=85)">x</div>`,
	`<meta http-equiv="refresh" content="0;url=javascript:window.pwned=86">`,
	"<base href=\"javascript:window.pwned=87//\">\n\n[x](a)",
	`<form action="javascript:window.pwned=88"><button>x</button></form>`,
	`<link rel=stylesheet href="data:text/css,*{color:red}">`,
	// SVG and MathML namespaces
	`<math><mtext><table><mglyph><style><img src=x onerror=window.pwned=90>`,
	`<svg><foreignObject><img src=x onerror=window.pwned=91></foreignObject></svg>`,
	`<svg><a xlink:href="javascript:window.pwned=92"><text>x</text></a></svg>`,
	`<math href="javascript:window.pwned=93">x</math>`,
	`<noscript><p title="</noscript><img src=x onerror=window.pwned=94>">`,
	`<template><img src=x onerror=window.pwned=95></template>`,
	`<textarea><img src=x onerror=window.pwned=96></textarea>`,
	// template injection
	`{{constructor.constructor('window.pwned=97')()}}`,
	"${window.pwned=98}",
	`<%= window.pwned=99 %>`,
	"`${window.pwned=100}`",
	// unicode tricks
	"[x](https://example.com/\u202egnp.exe)",
	"<scr\u200bipt>window.pwned=102</scr\u200bipt>",
	"\ufeff<script>window.pwned=103</script>",
	// payloads inside Markdown blocks
	"```html\n<script>window.pwned=104</script>\n```",
	"    <script>window.pwned=105</script>",
	"> <script>window.pwned=106</script>",
	"- <img src=x onerror=window.pwned=107>\n  - <svg onload=window.pwned=107>",
	"| a |\n|---|\n| <img src=x onerror=window.pwned=108> |",
	"# <svg onload=window.pwned=109>",
	"**<img src=x onerror=window.pwned=110>**",
	"`<img src=x onerror=window.pwned=111>`",
	"<think><script>window.pwned=112</script></think>\n\n<img src=x onerror=window.pwned=112>",
}

// allowedMarkup is what the renderer may create: element -> attributes.
var allowedMarkup = map[string][]string{
	"p": nil, "br": nil, "h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
	"pre": nil, "code": {"data-lang"}, "blockquote": nil, "ul": nil, "ol": {"start"}, "li": nil, "hr": nil,
	"strong": nil, "em": nil, "s": nil, "del": nil, "a": {"href", "rel", "target"}, "span": nil,
	"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": nil, "td": nil,
}

// checkMarkup is a page function: it lists what in root is outside
// allowed (elements, attributes, on* handlers, style, link schemes).
const checkMarkup = `(root, allowed) => {
	const bad = [];
	for (const e of root.querySelectorAll("*")) {
		const tag = e.localName, attrs = allowed[tag] || [];
		if (!Object.hasOwn(allowed, tag) || e.namespaceURI !== "http://www.w3.org/1999/xhtml") { bad.push("element " + e.outerHTML.slice(0, 80)); continue; }
		for (const a of e.attributes) {
			if (/^on/i.test(a.name)) bad.push("handler " + tag + " " + a.name);
			else if (a.name === "style") bad.push("style on " + tag);
			else if (!attrs.includes(a.name)) bad.push("attribute " + tag + " " + a.name);
		}
		if (tag === "a") {
			const href = e.getAttribute("href") || "";
			let proto = "";
			try { proto = new URL(href).protocol; } catch {}
			if (!/^(https?|mailto):/i.test(href) || !["http:", "https:", "mailto:"].includes(proto)) bad.push("link " + href);
			if (e.rel !== "noopener noreferrer nofollow" || e.target !== "_blank") bad.push("link rel/target " + e.rel + " " + e.target);
		}
	}
	return bad;
}`

// TestMarkdownXSSCorpus renders every payload in the page through the real
// renderer: one-shot (renderMarkdown), streamed in small chunks through a
// MarkdownView, and as a whole reply through chat.js's renderReply (which
// folds <think>). Nothing may run, and the DOM may hold only allow-listed
// elements and attributes, no handlers or styles, and only http, https or
// mailto links.
func TestMarkdownXSSCorpus(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range xssPayloads {
		if seen[p] {
			t.Fatalf("payload %q is listed twice", p)
		}
		seen[p] = true
	}
	if len(xssPayloads) < 71 {
		t.Fatalf("%d payloads, want at least 71", len(xssPayloads))
	}
	b := openMarkdownPage(t)
	var info struct {
		Title, URL, Base string
		Scripts          int
	}
	b.MustRun(`({Title: document.title, URL: location.href, Base: document.baseURI, Scripts: document.scripts.length})`, &info)

	var res []struct {
		Errors  []string
		OneShot []string
		Stream  []string
		Reply   []string
		Text    string
	}
	b.MustRun(`(async (payloads, allowed) => {
		const check = `+checkMarkup+`;
		const box = document.getElementById("messages");
		const out = [];
		for (const p of payloads) {
			const r = {Errors: [], OneShot: [], Stream: [], Reply: [], Text: ""};
			const li = document.createElement("li");
			box.appendChild(li);
			try {
				const one = document.createElement("div");
				li.appendChild(one);
				one.appendChild(md.renderMarkdown(p, document));
				r.OneShot = check(one, allowed);
				r.Text = one.textContent;
				const streamed = document.createElement("div");
				li.appendChild(streamed);
				for (let i = 1; i < p.length + 3; i += 3) md.renderMarkdownInto(streamed, p.slice(0, i));
				// Let the throttled tail render run (its delay follows the
				// last render's cost, so a loaded machine waits longer).
				const view = md.markdownView(streamed);
				for (let waited = 0; view.pending && waited < 5000; waited += 10) await new Promise((res) => setTimeout(res, 10));
				r.Stream = check(streamed, allowed);
				if (view.pending) r.Errors.push("streamed render still pending after 5 s");
				const reply = document.createElement("div");
				li.appendChild(reply);
				chat.renderReply(reply, "<think>" + p + "</think>\n" + p);
				chat.renderReply(reply, "<think>" + p + "</think>\n" + p, {final: true});
				const answer = reply.querySelector(":scope > .answer"), think = reply.querySelector(":scope > details.thinking > .thinking-text");
				if (!answer || !think) r.Errors.push("renderReply made no answer or thinking");
				else {
					r.Reply = check(answer, allowed);
					if (think.children.length) r.Errors.push("thinking text has elements");
				}
			} catch (e) {
				r.Errors.push(String(e && e.stack || e));
			}
			out.push(r);
		}
		await new Promise((res) => setTimeout(res, 500)); // image errors, refreshes and toggles fire by now
		return out;
	})(`+js(xssPayloads)+`, `+js(allowedMarkup)+`)`, &res)

	var after struct {
		Pwned, ParentPwned any
		Title, URL, Base   string
		Scripts            int
		Dangerous          []string
	}
	b.MustRun(`({Pwned: window.pwned === undefined ? null : window.pwned, ParentPwned: parent.pwned === undefined ? null : parent.pwned,
		Title: document.title, URL: location.href, Base: document.baseURI, Scripts: document.scripts.length,
		Dangerous: [...document.querySelectorAll("#messages :is(script, img, iframe, svg, math, object, embed, style, link, meta, base, form, input, video, audio, source, template, textarea, details:not(.thinking), marquee, noscript, isindex, xss)")].map((e) => e.outerHTML.slice(0, 80))})`, &after)
	if after.Pwned != nil || after.ParentPwned != nil {
		t.Errorf("a payload ran script: window.pwned = %v, parent.pwned = %v", after.Pwned, after.ParentPwned)
	}
	if after.Title != info.Title || after.URL != info.URL || after.Base != info.Base || after.Scripts != info.Scripts {
		t.Errorf("the document changed: %+v, was %+v", after, info)
	}
	if len(after.Dangerous) > 0 {
		t.Errorf("dangerous elements in the page: %q", after.Dangerous)
	}
	if len(res) != len(xssPayloads) {
		t.Fatalf("%d results for %d payloads", len(res), len(xssPayloads))
	}
	for i, r := range res {
		for what, bad := range map[string][]string{"error": r.Errors, "one-shot": r.OneShot, "streamed": r.Stream, "reply": r.Reply} {
			if len(bad) > 0 {
				t.Errorf("payload %d %q, %s: %q", i, xssPayloads[i], what, bad)
			}
		}
		if strings.TrimSpace(r.Text) == "" && strings.TrimSpace(xssPayloads[i]) != "" {
			t.Errorf("payload %d %q rendered no text", i, xssPayloads[i])
		}
	}
	t.Logf("%d payloads rendered three ways; nothing ran", len(xssPayloads))

	// What must still work: allowed links, autolinks, images as links.
	var links []string
	b.MustRun(`(() => { const d = document.createElement("div");
		d.appendChild(md.renderMarkdown("[a](https://example.com/a?b=1) <http://example.com/x> <me@example.com> [m](mailto:me@example.com) ![pic *1*](https://example.com/i.png)\n\n[r]\n\n[r]: https://example.com/ref"));
		return [...d.querySelectorAll("a")].map((a) => a.getAttribute("href") + " " + a.textContent); })()`, &links)
	want := []string{"https://example.com/a?b=1 a", "http://example.com/x http://example.com/x", "mailto:me@example.com me@example.com",
		"mailto:me@example.com m", "https://example.com/i.png pic 1", "https://example.com/ref r"}
	if strings.Join(links, "\n") != strings.Join(want, "\n") {
		t.Errorf("links\n%s\nwant\n%s", strings.Join(links, "\n"), strings.Join(want, "\n"))
	}
}

// pathological are the inputs that froze the tab (or overflowed the stack)
// with the hand-written renderer.
var pathological = []struct{ name, expr string }{
	{"heading with 2000 spaces", `"# a" + " ".repeat(2000) + "x"`},
	{"100000 [", `"[".repeat(100000)`},
	{"50000 [a", `"[a".repeat(50000)`},
	{"33333 ' *a'", `" *a".repeat(33333)`},
	{"4000 >", `">".repeat(4000)`},
}

// hangLimit is the bound on rendering one input. It is a hang
// guard, not a speed benchmark: the inputs above took seconds to minutes
// (or crashed) before, and take milliseconds now.
const hangLimit = 10 * time.Second

// streamInPage is a page function: it feeds text to a MarkdownView in
// chunks of size, yielding to the event loop between chunks (as a stream
// does, so throttled renders run on their timers), then waits for the view
// to catch up and compares its DOM with a one-shot render. final: the last
// update says so (one full render), as a caller may.
const streamInPage = `async (text, size, final) => {
	const yieldTask = () => new Promise((r) => { const c = new MessageChannel(); c.port1.onmessage = r; c.port2.postMessage(0); });
	const box = document.getElementById("messages");
	const streamed = document.createElement("div"), one = document.createElement("div");
	box.append(streamed, one);
	const t0 = performance.now();
	for (let i = size; i < text.length + size; i += size) {
		md.renderMarkdownInto(streamed, text.slice(0, i));
		await yieldTask();
	}
	if (final) md.renderMarkdownInto(streamed, text, {final: true});
	const v = md.markdownView(streamed);
	while (v.pending) await new Promise((r) => setTimeout(r, 5));
	const ms = performance.now() - t0;
	const t1 = performance.now();
	one.appendChild(md.renderMarkdown(text));
	const oneMs = performance.now() - t1;
	const equal = one.innerHTML === streamed.innerHTML;
	const r = {ms, oneMs, equal, stats: v.stats, chars: text.length, nodes: one.getElementsByTagName("*").length};
	if (!equal) { let k = 0; const a = one.innerHTML, b = streamed.innerHTML; while (a[k] === b[k]) k++; r.diff = [a.slice(Math.max(0, k - 80), k + 80), b.slice(Math.max(0, k - 80), k + 80)]; }
	streamed.remove(); one.remove();
	return r;
}`

type streamResult struct {
	MS, OneMS float64
	Equal     bool
	Stats     struct {
		Renders, Full int
		MS, MaxMS     float64
		ParsedChars   int
	}
	Chars, Nodes int
	Diff         []string
}

// TestMarkdownPathological renders each input that used to hang, one-shot
// and streamed, within hangLimit, and checks that streaming ends in the
// same DOM as a one-shot render.
func TestMarkdownPathological(t *testing.T) {
	b := openMarkdownPage(t)
	for _, p := range pathological {
		var one struct {
			MS    float64
			Err   *string
			Nodes int
		}
		start := time.Now()
		if err := b.Run(`(() => { const s = `+p.expr+`; const d = document.createElement("div"); const t0 = performance.now(); let err = null;
			try { d.appendChild(md.renderMarkdown(s)); } catch (e) { err = String(e); }
			return {MS: performance.now() - t0, Err: err, Nodes: d.getElementsByTagName("*").length}; })()`, &one); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if one.Err != nil {
			t.Errorf("%s: %s", p.name, *one.Err)
		}
		var s streamResult
		if err := b.Run(`(`+streamInPage+`)(`+p.expr+`, 64, false)`, &s); err != nil {
			t.Fatalf("%s streamed: %v", p.name, err)
		}
		if el := time.Since(start); el > hangLimit {
			t.Errorf("%s: %v to render one-shot and streamed, over the %v hang guard", p.name, el, hangLimit)
		}
		t.Logf("%s: one-shot %.1f ms (%d elements); streamed in 64-char chunks %.0f ms wall, %d renders, %.0f ms rendering, longest %.1f ms",
			p.name, one.MS, one.Nodes, s.MS, s.Stats.Renders, s.Stats.MS, s.Stats.MaxMS)
		if !s.Equal {
			t.Errorf("%s: the streamed DOM differs from a one-shot render: %q", p.name, s.Diff)
		}
	}
}

// TestMarkdownStreamedReply streams a 100 KB mixed reply in small chunks
// through the chat page (mock worker -> app.js -> chat.js renderReply ->
// MarkdownView): it must be shown within hangLimit, with the thinking
// folded, and the final DOM must equal a one-shot render of the answer.
func TestMarkdownStreamedReply(t *testing.T) {
	skipShort(t)
	reply := "<think>Let me lay out a long answer with *every* kind of block.</think>\n\n" + realisticReply(100<<10)
	web := browsertest.WebDir(t, map[string]string{"worker.js": streamingWorker(reply, 12, 24)})
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Web: web})
	b := browsertest.NewBrowser(t)
	openPage(t, b, srv.URL+"/?model=mock")
	b.MustRun(frameProbe, nil)
	start := time.Now()
	typeMessage(t, b, "write a lot")
	r := waitReply(t, b, 1)
	if r.Text != reply {
		t.Fatalf("reply of %d bytes, want %d", len(r.Text), len(reply))
	}
	var got struct {
		Equal             bool
		Pending           bool
		Stats             map[string]float64
		Summary, Thinking string
		Chars, Nodes      int
		Diff              []string
		Frames            map[string]float64
	}
	b.MustRun(`(async () => {
		const md = await import("./markdown.js"), chat = await import("./chat.js");
		const li = document.querySelector("[data-testid=assistant]"), a = li.querySelector(".answer"), v = md.markdownView(a);
		while (v.pending) await new Promise((r) => setTimeout(r, 5));
		const text = wasmllmApp.history[0].text, one = document.createElement("div");
		one.appendChild(md.renderMarkdown(chat.splitThinking(text).answer));
		const r = {Equal: one.innerHTML === a.innerHTML, Pending: v.pending, Stats: v.stats, Chars: text.length, Nodes: one.getElementsByTagName("*").length,
			Summary: li.querySelector("details.thinking summary").textContent, Thinking: li.querySelector(".thinking-text").textContent, Frames: window.__frames};
		if (!r.Equal) { let k = 0; const x = one.innerHTML, y = a.innerHTML; while (x[k] === y[k]) k++; r.Diff = [x.slice(Math.max(0, k - 80), k + 80), y.slice(Math.max(0, k - 80), k + 80)]; }
		return r; })()`, &got)
	elapsed := time.Since(start)
	t.Logf("%d bytes (%d elements) streamed in 12-byte chunks and shown in %v; renderer %v; frames while streaming %v",
		got.Chars, got.Nodes, elapsed.Round(time.Millisecond), got.Stats, got.Frames)
	if elapsed > hangLimit {
		t.Errorf("the reply took %v to stream and render, over the %v hang guard", elapsed, hangLimit)
	}
	if !got.Equal {
		t.Errorf("the streamed DOM differs from a one-shot render: %q", got.Diff)
	}
	if got.Summary != "Thought" || !strings.HasPrefix(got.Thinking, "Let me lay out") {
		t.Errorf("thinking: summary %q, text %q", got.Summary, got.Thinking)
	}
	if renders := got.Stats["renders"]; renders < 2 {
		t.Errorf("%v renders: the reply was not rendered while it streamed", renders)
	}
	if parsed := got.Stats["parsedChars"]; parsed > float64(20*len(reply)) {
		t.Errorf("rendering parsed %v chars for a %d-char reply: not incremental", parsed, len(reply))
	}
}

// TestMarkdownIncrementalExact streams texts full of constructs whose
// meaning depends on later lines (setext headings, tables, fences, lazy
// and loose lists, reference definitions) through a MarkdownView in
// uneven chunks, forcing a render at every step, and checks after each one
// that the DOM equals a one-shot render of the text so far.
func TestMarkdownIncrementalExact(t *testing.T) {
	b := openMarkdownPage(t)
	texts := []struct {
		text    string
		maxStep int
	}{
		{trickyMarkdown, 1},
		{trickyMarkdown, 9},
		{"See [later] first.\n\n" + trickyMarkdown + "\n[later]: https://example.com/later\n\nand [later] again\n", 1},
		{"[early]: https://example.com/early\n\n" + trickyMarkdown + "\n\n[early] used late", 5},
		{realisticReply(6 << 10), 9},
	}
	for i, tc := range texts {
		var r struct {
			Steps int
			Bad   []string
			Stats map[string]float64
		}
		b.MustRun(`((text, maxStep) => {
			const streamed = document.createElement("div"), one = document.createElement("div");
			document.body.append(streamed, one);
			let seed = 7, steps = 0;
			const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) % maxStep + 1;
			const bad = [];
			for (let i = rnd(); ; i += rnd()) {
				const s = text.slice(0, i);
				const v = md.renderMarkdownInto(streamed, s);
				v.nextAt = 0;
				if (v.pending) v.render();
				one.replaceChildren(md.renderMarkdown(s));
				steps++;
				if (one.innerHTML !== streamed.innerHTML && bad.length < 3) bad.push(JSON.stringify(s.slice(-120)) + "\n  one-shot " + one.innerHTML.slice(-300) + "\n  streamed " + streamed.innerHTML.slice(-300));
				if (i >= text.length) break;
			}
			const stats = md.markdownView(streamed).stats;
			streamed.remove(); one.remove();
			return {Steps: steps, Bad: bad, Stats: stats};
		})(`+js(tc.text)+`, `+fmt.Sprint(tc.maxStep)+`)`, &r)
		t.Logf("text %d: %d steps, %v", i, r.Steps, r.Stats)
		for _, s := range r.Bad {
			t.Errorf("text %d: streamed DOM differs after %s", i, s)
		}
	}
}

// trickyMarkdown holds constructs whose rendering depends on later lines.
const trickyMarkdown = "Intro paragraph\nwith a lazy second line\n===\n\n" +
	"para before a table\n| a | b |\n|:--|--:|\n| 1 | 2 |\n| 3 |\n\nnot a table\n| a |\n|--x\n\n" +
	"- one\n- two\n\n- three (loose now)\n\n  continued in the item\n* other marker\n+ third marker\n\n" +
	"1. first\n2. second\n10) other delimiter\n\n7. starts at seven\n\n" +
	"```js\nconst x = `tick`;\n```\nafter the fence\n```not`a fence\nstill text\n\n" +
	"~~~\nunclosed tilde fence\n```\nstill inside\n~~~\n\n" +
	"> quote\nlazy quote line\n> > nested\n\n" +
	"    indented code\n\n" +
	"Setext two\n---\n\n---\n\n*** \n\n" +
	"# h1 #\n## h2\n###### h6\n####### not a heading\n\n" +
	"Emphasis *a **b** c* _d_ ~~e~~ `f` [g](https://example.com/g) <https://example.com/h> \\*i\\*\n" +
	"hard break  \nnext line\\\nlast line\n\n" +
	"- [ ] task-like\n  - nested\n    - deeper\n      1. ordered inside\n\n" +
	"<div>raw html as text</div>\n\n" +
	"final paragraph without newline"

// realisticReply returns about n bytes of a mixed Markdown reply, as a
// model writes them: headings, paragraphs with inline markup and links,
// nested lists, code fences, tables and quotes.
func realisticReply(n int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "## Part %d: the **%d**th topic\n\n", i, i)
		fmt.Fprintf(&sb, "This paragraph explains item %d with *emphasis*, **strong text**, `inline_code(%d)` and a [link](https://example.com/doc/%d?x=%d).\n"+
			"It continues on a second line, mentions <https://example.com/auto/%d> and ends with a footnote-like remark (see ~~old~~ new notes).\n\n", i, i, i, i, i)
		switch i % 5 {
		case 0:
			fmt.Fprintf(&sb, "1. First step for %d\n2. Second step with `code`\n   - nested detail\n   - another detail with *style*\n3. Third step\n\n", i)
		case 1:
			fmt.Fprintf(&sb, "```python\ndef f_%d(x):\n    # a comment with <tags> and *stars*\n    return [x * %d for _ in range(3)]\n```\n\n", i, i)
		case 2:
			fmt.Fprintf(&sb, "| Name | Value | Note |\n|:-----|------:|:----:|\n| a%d | %d | *ok* |\n| b%d | %d | `x` |\n\n", i, i, i, i*2)
		case 3:
			fmt.Fprintf(&sb, "> A quoted remark about %d,\n> spanning two lines with **bold**.\n\n- bullet one\n- bullet two\n\n", i)
		case 4:
			fmt.Fprintf(&sb, "A long paragraph %d: %s\n\n---\n\n", i, strings.Repeat("words and more words, ", 30))
		}
	}
	return sb.String()
}

// frameProbe counts animation frames until the first reply is recorded,
// and the longest gap between two: how smooth the page stayed.
const frameProbe = `(() => { const s = window.__frames = {n: 0, maxGapMs: 0}; let last = performance.now();
	const f = () => { const now = performance.now(); s.n++; s.maxGapMs = Math.max(s.maxGapMs, now - last); last = now; if (!window.wasmllmApp.history.length) requestAnimationFrame(f); };
	requestAnimationFrame(f); })()`

// streamingWorker is a mock worker.js (see mockWorker in safety_test.go)
// that streams reply in chunks of size bytes, perTick chunks per timer
// tick (a few ms): a fast model, sending ~50-100 KB/s.
func streamingWorker(reply string, size, perTick int) string {
	return `"use strict";
const REPLY = ` + js(reply) + `, SIZE = ` + fmt.Sprint(size) + `, PER_TICK = ` + fmt.Sprint(perTick) + `;
const post = (id, type, data) => self.postMessage({id, type, data});
const tick = () => new Promise((r) => setTimeout(r, 1));
self.onmessage = async (ev) => {
	const m = ev.data || {};
	if (m.op === "init" || m.op === "unload") return post(m.id, "result", {});
	if (m.op === "load") {
		return post(m.id, "result", {backend: "webgpu", notice: "", adapter: {vendor: "mock"}, context_length: 4096,
			model: {name: "mock", has_tokenizer: true, has_chat_template: true}, load: {ms: 1, network_bytes: 20, cached_bytes: 0}});
	}
	if (m.op === "chat") {
		const base = {id: "chatcmpl-mock", object: "chat.completion.chunk", created: 0, model: "mock"};
		post(m.id, "chunk", {...base, choices: [{index: 0, delta: {role: "assistant", content: ""}, finish_reason: null, logprobs: null}]});
		for (let i = 0, k = 0; i < REPLY.length; i += SIZE, k++) {
			post(m.id, "chunk", {...base, choices: [{index: 0, delta: {content: REPLY.slice(i, i + SIZE)}, finish_reason: null, logprobs: null}]});
			if (k % PER_TICK === PER_TICK - 1) await tick();
		}
		const usage = {prompt_tokens: 3, completion_tokens: 9, total_tokens: 12, prompt_tokens_details: {cached_tokens: 0}};
		const timings = {prefill_tokens: 3, prefill_ms: 1, prefill_tokens_per_s: 3000, decode_tokens: 9, decode_ms: 9, decode_tokens_per_s: 1000};
		post(m.id, "chunk", {...base, choices: [{index: 0, delta: {}, finish_reason: "stop", logprobs: null}], usage, timings});
		return post(m.id, "result", {response: null, timings});
	}
};
`
}
