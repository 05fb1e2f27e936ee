package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/manifest"
)

// TestChatPage drives the chat page with the bundled stories260K (no chat
// template: plain continuation) in a browser without WebGPU, so the engine
// falls back to the CPU: streaming, equality with cmd/generate, prefix
// reuse on the second turn, stop by button and by Escape, new chat, the
// keyboard, and desktop and phone screenshots.
func TestChatPage(t *testing.T) {
	skipShort(t)
	models := modelsDir(t)
	model := filepath.Join(models, "stories260K")
	m, err := manifest.Read(model)
	if err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t, browsertest.NoWebGPU)
	if err := b.Viewport(1280, 860, 1, false); err != nil {
		t.Fatal(err)
	}
	openPage(t, b, srv.URL+"/?model=stories260K")

	var page struct {
		Backend, Notice, ModeNote, Selected, Focused, ProgressText string
		NoticeHidden, ModeNoteHidden, ThinkingHidden               bool
		ProgressValue, ProgressMax                                 float64
		Options                                                    []string
	}
	b.MustRun(`(() => { const q = (s) => document.querySelector(s); return {
		Backend: wasmllmApp.info.backend, Notice: q("[data-testid=notice]").textContent, NoticeHidden: q("[data-testid=notice]").hidden,
		ModeNote: q("[data-testid=mode-note]").textContent, ModeNoteHidden: q("[data-testid=mode-note]").hidden,
		ThinkingHidden: q("#thinking-row").hidden, Selected: q("[data-testid=model]").value,
		Options: [...q("[data-testid=model]").options].map((o) => o.value),
		Focused: document.activeElement.dataset.testid || document.activeElement.id,
		ProgressValue: q("[data-testid=progress]").value, ProgressMax: q("[data-testid=progress]").max,
		ProgressText: q("[data-testid=progress-text]").textContent }; })()`, &page)
	t.Logf("page after load: %+v", page)
	if page.Backend != "cpu" || page.NoticeHidden || !strings.Contains(page.Notice, "WebGPU is not available") {
		t.Errorf("without WebGPU: backend %q, notice hidden %v, notice %q; want cpu with a WebGPU notice", page.Backend, page.NoticeHidden, page.Notice)
	}
	if page.ModeNoteHidden || !strings.Contains(page.ModeNote, "no chat template") {
		t.Errorf("mode note %q (hidden %v): want the plain-continuation note", page.ModeNote, page.ModeNoteHidden)
	}
	if !page.ThinkingHidden {
		t.Error("the thinking switch is shown for a model without a template")
	}
	if page.Selected != "stories260K" || len(page.Options) != 1 {
		t.Errorf("picker: selected %q of %v", page.Selected, page.Options)
	}
	if total := float64(m.TotalBytes()); page.ProgressMax != total || page.ProgressValue != total || !strings.Contains(page.ProgressText, "1.12 MiB of 1.12 MiB") {
		t.Errorf("progress %v of %v (%q), want the whole %v bytes", page.ProgressValue, page.ProgressMax, page.ProgressText, total)
	}
	if page.Focused != "prompt" {
		t.Errorf("focus after loading is on %q, want the prompt", page.Focused)
	}

	// Keyboard: Shift+Enter is a new line; Tab goes from the prompt to Send.
	typeKeys(t, b, "a")
	if err := b.Keys(kb.Enter, chromedp.ModifierShift); err != nil {
		t.Fatal(err)
	}
	typeKeys(t, b, "b")
	var kbd struct {
		Value    string
		Messages int
	}
	b.MustRun(`({Value: document.querySelector("[data-testid=prompt]").value, Messages: document.querySelectorAll("#messages li").length})`, &kbd)
	if kbd.Value != "a\nb" || kbd.Messages != 0 {
		t.Errorf("after a, Shift+Enter, b: prompt %q and %d messages; want \"a\\nb\" and none", kbd.Value, kbd.Messages)
	}
	typeKeys(t, b, kb.Tab)
	var focused string
	b.MustRun(`document.activeElement.dataset.testid`, &focused)
	if focused != "send" {
		t.Errorf("Tab from the prompt focuses %q, want send", focused)
	}
	b.MustRun(`document.querySelector("[data-testid=prompt]").value = ""`, nil)

	// First turn: streams, and equals cmd/generate.
	s := settings{Temperature: 0.8, TopP: 0.9, TopK: 40, MinP: 0.05, RepetitionPenalty: 1.05, FrequencyPenalty: 0.1, PresencePenalty: 0.1, MaxTokens: 48, Seed: 7}
	s.apply(t, b)
	b.MustRun(`(() => { window.lens = []; new MutationObserver(() => {
		const a = document.querySelectorAll("[data-testid=assistant] .body"); if (a.length) lens.push(a[a.length - 1].textContent.length);
	}).observe(document.getElementById("messages"), {subtree: true, childList: true, characterData: true}); })()`, nil)
	p1 := "Once upon a time"
	typeMessage(t, b, p1)
	r1 := waitReply(t, b, 1)
	want1 := generate(t, append([]string{"-model", model, "-prompt", p1}, s.flags()...)...)
	if r1.Text != want1.Text {
		t.Errorf("reply 1:\npage:     %q\ngenerate: %q", r1.Text, want1.Text)
	}
	if r1.Usage.CompletionTokens != len(want1.IDs) || r1.FinishReason != "length" {
		t.Errorf("reply 1: %d tokens, finish %q; generate gave %d tokens", r1.Usage.CompletionTokens, r1.FinishReason, len(want1.IDs))
	}
	var lens []int
	b.MustRun(`lens`, &lens)
	if distinct(lens) < 3 || r1.Chunks < 3 {
		t.Errorf("the reply did not stream: %d chunks, displayed lengths %v", r1.Chunks, lens)
	}
	var shown struct{ Text, Usage string }
	b.MustRun(`(() => { const a = [...document.querySelectorAll("[data-testid=assistant]")].pop();
		return {Text: a.querySelector(".answer").textContent, Usage: a.querySelector("[data-testid=usage]").textContent}; })()`, &shown)
	if shown.Text != r1.Text {
		t.Errorf("displayed %q, want %q", shown.Text, r1.Text)
	}
	ids1 := promptIDs(t, model, p1)
	if !strings.Contains(shown.Usage, fmt.Sprintf("prefill %d tok at", len(ids1))) || !strings.Contains(shown.Usage, "decode 48 tok at") || !strings.Contains(shown.Usage, "tok/s") {
		t.Errorf("usage line %q", shown.Usage)
	}
	t.Logf("reply 1 (%d chunks, prefill %.1f tok/s, decode %.1f tok/s): %q", r1.Chunks, r1.Timings.PrefillPerSecond, r1.Timings.DecodePerSecond, r1.Text)
	screenshot(t, b, "chat-desktop.png")
	if err := b.Viewport(390, 844, 2, true); err != nil {
		t.Fatal(err)
	}
	var overflow struct{ Scroll, Inner int }
	b.MustRun(`({Scroll: document.documentElement.scrollWidth, Inner: window.innerWidth})`, &overflow)
	if overflow.Scroll > overflow.Inner {
		t.Errorf("phone width: the page is %d px wide in a %d px viewport", overflow.Scroll, overflow.Inner)
	}
	screenshot(t, b, "chat-phone.png")
	if err := b.Viewport(1280, 860, 1, false); err != nil {
		t.Fatal(err)
	}

	// Second turn: the text so far plus the new message; only the new
	// tokens are prefilled, and the reply equals cmd/generate on the whole text.
	add := " The next day"
	typeMessage(t, b, add)
	r2 := waitReply(t, b, 2)
	p2 := p1 + r1.Text + add
	ids2 := promptIDs(t, model, p2)
	cached := expectedCached(ids1, want1.IDs, ids2)
	if r2.Usage.PromptTokens != len(ids2) || r2.Usage.PromptTokensDetails.CachedTokens != cached || r2.Timings.PrefillTokens != len(ids2)-cached {
		t.Errorf("turn 2: prompt %d, cached %d, prefilled %d; want %d, %d, %d",
			r2.Usage.PromptTokens, r2.Usage.PromptTokensDetails.CachedTokens, r2.Timings.PrefillTokens, len(ids2), cached, len(ids2)-cached)
	}
	if reused := len(ids1) + len(want1.IDs) - 1; cached < reused-1 {
		t.Errorf("turn 2 reused %d tokens; turn 1 left %d in the cache", cached, reused)
	}
	t.Logf("turn 2: %d prompt tokens, %d cached, %d prefilled", r2.Usage.PromptTokens, r2.Usage.PromptTokensDetails.CachedTokens, r2.Timings.PrefillTokens)
	want2 := generate(t, append([]string{"-model", model, "-prompt", p2}, s.flags()...)...)
	if r2.Text != want2.Text {
		t.Errorf("reply 2:\npage:     %q\ngenerate: %q", r2.Text, want2.Text)
	}

	// Stop with the button mid-reply: at most one more token, then a new
	// message works.
	installStopProbe(t, b)
	s.MaxTokens = 0 // until the context is full
	s.apply(t, b)
	typeMessage(t, b, " Tom had a big red ball.")
	if err := b.WaitFor(`wasmllmApp.chunks >= 8`, replyTimeout, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Click("[data-testid=stop]"); err != nil {
		t.Fatal(err)
	}
	checkStopped(t, b, waitReply(t, b, 3), "Stop button")
	s.MaxTokens = 12
	s.apply(t, b)
	typeMessage(t, b, " She ran")
	if r := waitReply(t, b, 4); r.FinishReason == "abort" || r.Text == "" || r.Usage.CompletionTokens == 0 {
		t.Errorf("the message after stop: finish %q, text %q", r.FinishReason, r.Text)
	}

	// Stop with Escape.
	s.MaxTokens = 0
	s.apply(t, b)
	b.MustRun(`stopProbe.seq.length = 0`, nil)
	typeMessage(t, b, " Then")
	if err := b.WaitFor(`wasmllmApp.chunks >= 4`, replyTimeout, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Keys(kb.Escape); err != nil {
		t.Fatal(err)
	}
	checkStopped(t, b, waitReply(t, b, 5), "Escape")

	// New chat: the text starts again, so the first reply comes back.
	if err := b.Click("[data-testid=new-chat]"); err != nil {
		t.Fatal(err)
	}
	var left int
	b.MustRun(`document.querySelectorAll("#messages li").length`, &left)
	if left != 0 {
		t.Errorf("%d messages left after New chat", left)
	}
	s.MaxTokens = 48
	s.apply(t, b)
	typeMessage(t, b, p1)
	r6 := waitReply(t, b, 6)
	if r6.Usage.PromptTokens != len(ids1) || r6.Text != want1.Text {
		t.Errorf("after New chat: %d prompt tokens (want %d), reply %q (want %q)", r6.Usage.PromptTokens, len(ids1), r6.Text, want1.Text)
	}
}

// installStopProbe instruments the page's engine so that a stop can be
// timed in tokens: right after the abort message, it posts the worker a
// message that worker.js answers at once, without the engine ("init" of an
// engine that is already running). The worker handles messages in order,
// so the content chunks that arrive after that answer are the tokens
// generated after the worker saw the abort.
func installStopProbe(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	b.MustRun(`(() => {
		const e = wasmllmApp.engine, w = e._conn.worker;
		window.stopProbe = {seq: []};
		w.addEventListener("message", (ev) => {
			const m = ev.data || {}, ch = m.data && m.data.choices && m.data.choices[0];
			if (m.type === "chunk" && ch && (ch.text || (ch.delta && ch.delta.content))) stopProbe.seq.push("c");
			else if (m.id === -7) stopProbe.seq.push("p");
		});
		const abort = e.abort.bind(e);
		e.abort = () => { abort(); w.postMessage({id: -7, op: "init"}); };
	})()`, nil)
}

// checkStopped checks a reply stopped by the user: finish_reason "abort",
// and at most one token generated after the worker received the stop.
func checkStopped(t *testing.T, b *browsertest.Browser, r reply, how string) {
	t.Helper()
	var seq []string
	b.MustRun(`stopProbe.seq.splice(0)`, &seq)
	before, after, pinged := 0, 0, false
	for _, s := range seq {
		switch {
		case s == "p":
			pinged = true
		case pinged:
			after++
		default:
			before++
		}
	}
	if r.ChunksAtStop == nil || !pinged {
		t.Fatalf("%s: no stop was recorded (page %v, worker answer %v)", how, r.ChunksAtStop, pinged)
	}
	t.Logf("%s: %d tokens shown at the click, %d generated before the worker saw the stop, %d after; %d in all",
		how, *r.ChunksAtStop, before, after, r.Usage.CompletionTokens)
	if r.FinishReason != "abort" {
		t.Errorf("%s: finish_reason %q, want abort", how, r.FinishReason)
	}
	if after > 1 {
		t.Errorf("%s: %d tokens generated after the worker received the stop, want at most 1", how, after)
	}
	// Every token with text is a chunk; a special token has none: the
	// model starts a new story with BOS after a finished one (". Once upon
	// a time"), at most once in the few dozen tokens before a stop. The
	// stop may come right after that BOS, before the story's first word
	// (CI stopped once after "The monkey was happy too." and its BOS).
	sent := before + after
	bos := strings.Count(r.Text, ". Once")
	if strings.HasSuffix(r.Text, ".") {
		bos++
	}
	if r.Chunks != sent || r.Usage.CompletionTokens < sent || r.Usage.CompletionTokens > sent+bos {
		t.Errorf("%s: usage says %d tokens, the page counted %d chunks, the worker sent %d (text %q)", how, r.Usage.CompletionTokens, r.Chunks, sent, r.Text)
	}
}

func typeKeys(t *testing.T, b *browsertest.Browser, keys string) {
	t.Helper()
	if err := b.Keys(keys); err != nil {
		t.Fatal(err)
	}
}

func distinct(v []int) int {
	seen := map[int]bool{}
	for _, x := range v {
		seen[x] = true
	}
	return len(seen)
}
