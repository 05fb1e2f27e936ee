package e2e

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
)

// These tests drive web/wasmllm.js the way OpenAI's documentation and
// WebLLM's examples write clients, in headless Chromium, against the real
// server: cancellation (one request, by its AbortSignal or by leaving a
// stream), stream shapes (usage only with include_usage, in a last chunk
// with no choices; errors at create()), request validation, n > 1, and the
// module imported from another origin.

// compatModels returns a models folder holding the bundled stories260K (no
// chat template) and tiny-qwen3 converted with the Qwen3 chat template.
func compatModels(t *testing.T) string {
	t.Helper()
	models := modelsDir(t)
	browsertest.Convert(t, browsertest.RepoFile("testdata/hf/tiny-qwen3"), filepath.Join(models, "tiny-qwen3"),
		browsertest.ConvertOptions{Tokenizer: browsertest.ChatTokenizer(t, "tiny-qwen3")})
	return models
}

// loadEngine creates window.engine on the test page with createEngine's
// options opts (JSON).
func loadEngine(t *testing.T, b *browsertest.Browser, opts string) {
	t.Helper()
	if err := b.Run(`wasmllm.createEngine(`+opts+`).then((e) => { window.engine = e; return e.info.backend; })`, nil); err != nil {
		t.Fatalf("createEngine(%s): %v", opts, err)
	}
}

// pageHelpers are defined in the page before a test's scripts run.
const pageHelpers = `(() => {
window.sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// nextStats waits until engine.stats is no longer s0 (the next request has
// finished) and returns it.
window.nextStats = async (e, s0) => { while (e.stats === s0) await sleep(2); return e.stats; };
window.codeOf = async (p) => { try { await p; return "ok"; } catch (err) { return err.code + ": " + err.message + (err.details && err.details.param ? " [" + err.details.param + "]" : ""); } };
return true;
})()`

// TestClientCancel: cancelling one request stops it in the worker within
// a token or two, whichever way the client cancels: by leaving a for-await
// loop early, by create(body, {signal}) and AbortController.abort() (for a
// stream and for a plain request), or by stream.controller.abort(). The
// next request does not wait behind the cancelled one, and a request
// queued behind a cancelled one runs normally.
func TestClientCancel(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: modelsDir(t)})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	b.MustRun(pageHelpers, nil)
	loadEngine(t, b, `{model: "/models/stories260K/", backend: "cpu"}`)
	// 500 tokens (the context holds 2048), about
	// 1.5 s of decoding on this machine.
	const long = `{prompt: "Once upon a time", max_tokens: 500, temperature: 0, ignore_eos: true}`

	var full struct {
		MS     float64 `json:"ms"`
		Tokens int     `json:"tokens"`
	}
	b.MustRun(`(async () => { const t0 = performance.now(); const r = await engine.completions.create(`+long+`);
		return {ms: performance.now() - t0, tokens: r.usage.completion_tokens}; })()`, &full)
	t.Logf("the long request uncancelled: %d tokens in %.0f ms", full.Tokens, full.MS)
	if full.Tokens < 400 {
		t.Fatalf("the long request made %d tokens", full.Tokens)
	}

	var brk struct {
		Chunks  int     `json:"chunks"`
		Decoded int     `json:"decoded"`
		NextMS  float64 `json:"next_ms"`
		Next    string  `json:"next"`
	}
	b.MustRun(`(async () => {
		const s0 = engine.stats;
		let chunks = 0;
		for await (const c of await engine.completions.create({...`+long+`, stream: true})) {
			if (c.choices[0] && c.choices[0].text) chunks++;
			if (chunks === 3) break;
		}
		const t0 = performance.now();
		const next = await engine.completions.create({prompt: "Lily", max_tokens: 1, temperature: 0});
		const next_ms = performance.now() - t0;
		return {chunks, decoded: engine.stats === s0 ? -1 : 0, next_ms, next: next.choices[0].finish_reason};
	})()`, &brk)
	// The stats of the cancelled request were replaced by the next one's;
	// measure the cancelled one alone.
	b.MustRun(`(async () => {
		const s0 = engine.stats;
		let chunks = 0;
		for await (const c of await engine.completions.create({...`+long+`, stream: true})) {
			if (c.choices[0] && c.choices[0].text) chunks++;
			if (chunks === 3) break;
		}
		return (await nextStats(engine, s0)).decode_tokens;
	})()`, &brk.Decoded)
	t.Logf("break after 3 chunks: %d tokens decoded; the next 1-token request took %.0f ms", brk.Decoded, brk.NextMS)
	// The worker decodes ahead of the page reading the chunks (about 1.5
	// ms a token here), so a stream stops a few tokens after the page's
	// cancel; the plain request below, aborted from a logits processor
	// (which the worker waits for), shows the exact bound.
	if brk.Decoded > 50 {
		t.Errorf("leaving the loop after 3 chunks: the worker decoded %d tokens", brk.Decoded)
	}
	if brk.NextMS > full.MS/2 {
		t.Errorf("the next request took %.0f ms, the whole long request %.0f ms: it waited behind the cancelled one", brk.NextMS, full.MS)
	}

	var sig struct {
		Code, CodeStream, CodeController string
		Decoded, DecodedStream           int
		DecodedController                int
		After, AfterController           int
		Timed                            string
		TimedDecoded                     int
	}
	b.MustRun(`(async () => {
		const out = {};
		// A plain request, aborted from its 3rd token on (a logits processor
		// sees every token).
		let ac = new AbortController(), s0 = engine.stats;
		out.Code = await codeOf(engine.completions.create({...`+long+`,
			logits_processors: [(l, ids) => { if (ids.length === 3) ac.abort(); }]}, {signal: ac.signal}));
		out.Decoded = (await nextStats(engine, s0)).decode_tokens;
		// A plain request aborted by the clock.
		ac = new AbortController(); s0 = engine.stats;
		const p = engine.completions.create(`+long+`, {signal: ac.signal});
		await sleep(100);
		ac.abort();
		out.Timed = await codeOf(p);
		out.TimedDecoded = (await nextStats(engine, s0)).decode_tokens;
		// A stream: the next read rejects, no chunk comes after the abort.
		ac = new AbortController(); s0 = engine.stats;
		let n = 0; out.After = 0;
		const stream = await engine.completions.create({...`+long+`, stream: true}, {signal: ac.signal});
		out.CodeStream = await codeOf((async () => { for await (const c of stream) { n++; if (ac.signal.aborted) out.After++; if (n === 3) ac.abort(); } })());
		out.DecodedStream = (await nextStats(engine, s0)).decode_tokens;
		// stream.controller, as OpenAI's client has it.
		s0 = engine.stats; n = 0; out.AfterController = 0;
		const s2 = await engine.completions.create({...`+long+`, stream: true});
		out.CodeController = await codeOf((async () => { for await (const c of s2) { n++; if (s2.controller.signal.aborted) out.AfterController++; if (n === 3) s2.controller.abort(); } })());
		out.DecodedController = (await nextStats(engine, s0)).decode_tokens;
		return out;
	})()`, &sig)
	t.Logf("signal: %+v", sig)
	for _, c := range []struct {
		what, code string
		decoded    int
		bound      int
	}{{"plain request (processor)", sig.Code, sig.Decoded, 4}, {"stream", sig.CodeStream, sig.DecodedStream, 50}, {"stream.controller", sig.CodeController, sig.DecodedController, 50}} {
		if !strings.HasPrefix(c.code, "aborted:") || c.decoded > c.bound {
			t.Errorf("%s: %s after %d tokens decoded; want code aborted within %d", c.what, c.code, c.decoded, c.bound)
		}
	}
	if !strings.HasPrefix(sig.Timed, "aborted:") || sig.TimedDecoded >= full.Tokens {
		t.Errorf("plain request aborted after 100 ms: %s, %d tokens decoded", sig.Timed, sig.TimedDecoded)
	}
	if sig.After != 0 || sig.AfterController != 0 {
		t.Errorf("chunks read after the abort: %d (signal), %d (controller)", sig.After, sig.AfterController)
	}

	// Cancelling one request leaves the others alone: B, queued behind A,
	// answers what it answers alone.
	var iso struct {
		Alone, Queued, Finish, CodeA string
		MS, Total                    float64
	}
	b.MustRun(`(async () => {
		const reqB = {prompt: "Lily", max_tokens: 20, temperature: 0};
		const alone = (await engine.completions.create(reqB)).choices[0].text;
		const ac = new AbortController();
		const a = await engine.completions.create({...`+long+`, stream: true}, {signal: ac.signal});
		const t0 = performance.now();
		const pb = engine.completions.create(reqB);
		const ca = codeOf((async () => { for await (const c of a) ac.abort(); })());
		const rb = await pb;
		return {Alone: alone, Queued: rb.choices[0].text, Finish: rb.choices[0].finish_reason, CodeA: await ca, MS: performance.now() - t0};
	})()`, &iso)
	if iso.Queued != iso.Alone || iso.Finish != "length" || !strings.HasPrefix(iso.CodeA, "aborted:") {
		t.Errorf("queued behind a cancelled request: %q (%s), alone %q; A: %s", iso.Queued, iso.Finish, iso.Alone, iso.CodeA)
	}
	if iso.MS > full.MS/2 {
		t.Errorf("the queued request took %.0f ms, the whole long one %.0f ms", iso.MS, full.MS)
	}

	// engine.abort() still ends everything with finish_reason "abort".
	var ab []string
	b.MustRun(`(async () => {
		const p1 = engine.completions.create(`+long+`), p2 = engine.completions.create(`+long+`);
		await sleep(50);
		engine.abort();
		return (await Promise.all([p1, p2])).map((r) => r.choices[0].finish_reason);
	})()`, &ab)
	if len(ab) != 2 || ab[0] != "abort" || ab[1] != "abort" {
		t.Errorf("engine.abort(): %v", ab)
	}
}

// TestClientStreams: OpenAI's stream shapes. Usage comes only with
// stream_options.include_usage, as one last chunk with choices [] after
// the finish chunk (which carries timings, not usage); a request that
// fails before its first token rejects create() itself; n > 1 streams its
// choices one after another with their indexes.
func TestClientStreams(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: compatModels(t)})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	b.MustRun(pageHelpers, nil)
	b.MustRun(`Promise.all([wasmllm.createEngine({model: "/models/tiny-qwen3/", backend: "cpu"}), wasmllm.createEngine({model: "/models/stories260K/", backend: "cpu"})])
		.then(([q, s]) => { window.qwen = q; window.stories = s; return true; })`, nil)

	type shape struct {
		Objects    []string       `json:"objects"`
		Usage      []bool         `json:"usage"`
		NChoices   []int          `json:"nchoices"`
		Finish     []any          `json:"finish"`
		Index      []int          `json:"index"`
		Timings    []bool         `json:"timings"`
		LastUsage  map[string]any `json:"last_usage"`
		Text       string         `json:"text"`
		RoleChunks int            `json:"role_chunks"`
	}
	collect := func(engine, req string) shape {
		var s shape
		b.MustRun(`(async () => {
			const s = {objects: [], usage: [], nchoices: [], finish: [], index: [], timings: [], last_usage: null, text: "", role_chunks: 0};
			for await (const c of await `+engine+`.create(`+req+`)) {
				s.objects.push(c.object); s.usage.push(!!c.usage); s.nchoices.push(c.choices.length); s.timings.push(!!c.timings);
				const ch = c.choices[0];
				s.finish.push(ch ? ch.finish_reason : "none"); s.index.push(ch ? ch.index : -1);
				if (ch && ch.delta && ch.delta.role) s.role_chunks++;
				if (ch) s.text += (ch.delta ? ch.delta.content : ch.text) || "";
				if (c.usage) s.last_usage = c.usage;
			}
			return s;
		})()`, &s)
		return s
	}
	chat := `{messages: [{role: "user", content: "Hello"}], max_tokens: 6, temperature: 0, stream: true%s}`
	for _, tc := range []struct {
		engine, req, object string
	}{
		{"qwen.chat.completions", chat, "chat.completion.chunk"},
		{"stories.completions", `{prompt: "Once upon a time", max_tokens: 6, temperature: 0, stream: true%s}`, "text_completion"},
	} {
		with := collect(tc.engine, fmt.Sprintf(tc.req, `, stream_options: {include_usage: true}`))
		n := len(with.Objects)
		if n < 3 || with.NChoices[n-1] != 0 || !with.Usage[n-1] || with.LastUsage["completion_tokens"] != 6.0 || with.Objects[n-1] != tc.object {
			t.Errorf("%s with include_usage: %+v; want a last chunk of usage and no choices", tc.engine, with)
		}
		if with.Finish[n-2] != "length" || with.Usage[n-2] || !with.Timings[n-2] {
			t.Errorf("%s: the finish chunk %+v", tc.engine, with)
		}
		without := collect(tc.engine, fmt.Sprintf(tc.req, ""))
		for i, u := range without.Usage {
			if u || without.NChoices[i] != 1 {
				t.Errorf("%s without include_usage: chunk %d has usage %v, %d choices", tc.engine, i, u, without.NChoices[i])
			}
		}
		if without.Text != with.Text || without.Finish[len(without.Finish)-1] != "length" {
			t.Errorf("%s: %q / %q", tc.engine, without.Text, with.Text)
		}
		if tc.object == "chat.completion.chunk" && (with.RoleChunks != 1 || without.RoleChunks != 1) {
			t.Errorf("%s: %d and %d chunks with a role, want the first only", tc.engine, with.RoleChunks, without.RoleChunks)
		}
	}

	// n > 1 in a stream: choice 0's chunks, then choice 1's.
	two := collect("qwen.chat.completions", fmt.Sprintf(chat, `, n: 2, temperature: 1, seed: 4, stream_options: {include_usage: true}`))
	var nonStream struct {
		Texts []string `json:"texts"`
		Index []int    `json:"index"`
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	b.MustRun(`qwen.chat.completions.create({messages: [{role: "user", content: "Hello"}], max_tokens: 6, n: 2, temperature: 1, seed: 4})
		.then((r) => ({texts: r.choices.map((c) => c.message.content), index: r.choices.map((c) => c.index), usage: r.usage}))`, &nonStream)
	if two.LastUsage["completion_tokens"] != 12.0 || two.Text != strings.Join(nonStream.Texts, "") || two.RoleChunks != 2 {
		t.Errorf("n = 2 stream %+v; non-streaming %+v", two, nonStream)
	}
	seen := -1
	for _, i := range two.Index[:len(two.Index)-1] {
		if i < seen {
			t.Errorf("stream indexes %v: choices interleave", two.Index)
			break
		}
		seen = i
	}
	if len(nonStream.Index) != 2 || nonStream.Index[1] != 1 || nonStream.Usage.Completion != 12 {
		t.Errorf("n = 2: %+v", nonStream)
	}

	// Errors before the first token reject create(), not the first next().
	var errs map[string]string
	b.MustRun(`(async () => {
		const at = async (p) => { let stream; try { stream = await p; } catch (e) { return "create: " + e.code; }
			try { for await (const c of stream) {} return "no error"; } catch (e) { return "next: " + e.code; } };
		return {
			no_template: await at(stories.chat.completions.create({messages: [{role: "user", content: "Hi"}], stream: true})),
			overflow: await at(qwen.chat.completions.create({messages: [{role: "user", content: "hello ".repeat(5000)}], stream: true})),
			bad_param: await at(qwen.chat.completions.create({messages: [{role: "user", content: "Hi"}], stream: true, top_p: 7})),
			raw_overflow: await at(stories.completions.create({prompt: Array(3000).fill(5), stream: true})),
		};
	})()`, &errs)
	want := map[string]string{"no_template": "create: no_chat_template", "overflow": "create: context_overflow",
		"bad_param": "create: bad_request", "raw_overflow": "create: context_overflow"}
	for k, v := range want {
		if errs[k] != v {
			t.Errorf("%s: %s, want %s", k, errs[k], v)
		}
	}

	// engine.reload(url) switches the worker to that model (and back);
	// resetCache empties the KV cache.
	var sw struct {
		Switched, Back     string
		Chat               string
		Cached, AfterReset int
	}
	b.MustRun(`(async () => {
		const out = {};
		out.Switched = (await stories.reload("/models/tiny-qwen3/")).model.url;
		out.Chat = (await stories.chat.completions.create({messages: [{role: "user", content: "Hi"}], max_tokens: 2})).choices[0].finish_reason;
		out.Back = (await stories.reload({model: "/models/stories260K/"})).model.url;
		const req = {prompt: "Once upon a time there was", max_tokens: 2};
		await stories.completions.create(req);
		out.Cached = (await stories.completions.create(req)).usage.prompt_tokens_details.cached_tokens;
		await stories.resetCache();
		out.AfterReset = (await stories.completions.create(req)).usage.prompt_tokens_details.cached_tokens;
		return out;
	})()`, &sw)
	if !strings.HasSuffix(sw.Switched, "/models/tiny-qwen3/") || sw.Chat != "length" || !strings.HasSuffix(sw.Back, "/models/stories260K/") {
		t.Errorf("reload(url): %+v", sw)
	}
	if sw.Cached == 0 || sw.AfterReset != 0 {
		t.Errorf("resetCache: %d cached before, %d after", sw.Cached, sw.AfterReset)
	}
}

// TestClientValidation: what OpenAI clients send is used as they mean it
// or refused naming the field: unknown roles, max_tokens 0, image parts,
// unknown response formats and tool_choice without tools are refused;
// text content parts, the developer role, nulls, every response_format
// (text, json_object, json_schema), tool_choice auto/none/required and
// vLLM's guided_* work (structured_test.go checks the replies).
func TestClientValidation(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: compatModels(t)})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	b.MustRun(pageHelpers, nil)
	loadEngine(t, b, `{model: "/models/tiny-qwen3/", backend: "cpu"}`)
	var got map[string]string
	b.MustRun(`(async () => {
		const msgs = [{role: "user", content: "Hello"}];
		const c = (extra) => codeOf(engine.chat.completions.create({messages: msgs, max_tokens: 2, ...extra}));
		return {
			narrator: await codeOf(engine.chat.completions.create({messages: [{role: "narrator", content: "x"}, ...msgs], max_tokens: 2})),
			max_tokens_0: await c({max_tokens: 0}),
			max_completion_tokens_0: await c({max_tokens: null, max_completion_tokens: 0}),
			completion_max_tokens_0: await codeOf(engine.completions.create({prompt: "x", max_tokens: 0})),
			image: await codeOf(engine.chat.completions.create({messages: [{role: "user", content: [{type: "image_url", image_url: {url: "data:,"}}]}]})),
			yaml: await c({response_format: {type: "yaml"}}),
			tool_required_no_tools: await c({tool_choice: "required"}),
			json_object: await c({response_format: {type: "json_object"}}),
			json_schema: await c({response_format: {type: "json_schema", json_schema: {name: "x", schema: {type: "object"}}}}),
			guided_choice: await c({guided_choice: ["yes", "no"]}),
			tool_required: await c({tools: [{type: "function", function: {name: "f", parameters: {type: "object", properties: {}}}}], tool_choice: "required"}),
			user_null: await codeOf(engine.chat.completions.create({messages: [{role: "user", content: null}]})),
			top_logprobs_null: await c({top_logprobs: null}),
			nulls: await c({logprobs: null, top_logprobs: null, seed: null, stop: null, n: null, stream_options: null, response_format: null, tool_choice: null}),
			response_format_text: await c({response_format: {type: "text"}}),
			tool_choice: await c({tools: [{type: "function", function: {name: "f", parameters: {type: "object"}}}], tool_choice: "auto", parallel_tool_calls: false}),
		};
	})()`, &got)
	for k, want := range map[string]string{
		"narrator": "bad_request [messages[0].role]", "max_tokens_0": "bad_request [max_tokens]",
		"max_completion_tokens_0": "bad_request [max_completion_tokens]", "completion_max_tokens_0": "bad_request [max_tokens]",
		"image": "bad_request [messages[0].content[0].type]", "yaml": "bad_request [response_format.type]",
		"tool_required_no_tools": "bad_request [tool_choice]", "user_null": "bad_request [messages[0].content]",
	} {
		if !strings.HasPrefix(got[k], strings.Fields(want)[0]+":") || !strings.HasSuffix(got[k], strings.Fields(want)[1]) {
			t.Errorf("%s: %s, want %s", k, got[k], want)
		}
	}
	for _, k := range []string{"top_logprobs_null", "nulls", "response_format_text", "tool_choice", "json_object", "json_schema", "guided_choice", "tool_required"} {
		if got[k] != "ok" {
			t.Errorf("%s: %s, want it accepted", k, got[k])
		}
	}

	// Text parts read as the joined string; developer reads as system.
	var same struct{ Parts, Plain, Dev, Sys string }
	b.MustRun(`(async () => {
		const text = async (messages) => (await engine.chat.completions.create({messages, max_tokens: 8, temperature: 0})).choices[0].message.content;
		return {
			Parts: await text([{role: "user", content: [{type: "text", text: "Hello"}, {type: "text", text: "there"}]}]),
			Plain: await text([{role: "user", content: "Hello\nthere"}]),
			Dev: await text([{role: "developer", content: "Be brief."}, {role: "user", content: "Hi"}]),
			Sys: await text([{role: "system", content: "Be brief."}, {role: "user", content: "Hi"}]),
		};
	})()`, &same)
	if same.Parts != same.Plain || same.Dev != same.Sys {
		t.Errorf("content parts %q, the joined string %q; developer %q, system %q", same.Parts, same.Plain, same.Dev, same.Sys)
	}
}

// TestClientCrossOrigin imports wasmllm.js from the wasmllm server (started
// with -cors) into a page of another origin, as a page importing it from
// a CDN does: createEngine starts its worker through a same-origin blob,
// and the reply equals cmd/generate's.
func TestClientCrossOrigin(t *testing.T) {
	skipShort(t)
	models := modelsDir(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models, Args: []string{"-cors", "*"}})
	page := `<!doctype html>
<meta charset="utf-8">
<title>elsewhere</title>
<script type="module">
import * as wasmllm from "` + html.EscapeString(srv.URL) + `/wasmllm.js";
window.wasmllm = wasmllm;
window.pageReady = true;
</script>
`
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(page))
	}))
	t.Cleanup(other.Close)
	b := browsertest.NewBrowser(t)
	b.Open(other.URL + "/")
	var r struct {
		Text, Origin string
		Backend      string
	}
	if err := b.Run(`(async () => {
		const engine = await wasmllm.createEngine({model: "`+srv.URL+`/models/stories260K/", backend: "cpu"});
		const c = await engine.completions.create({prompt: "Once upon a time", max_tokens: 24, temperature: 0});
		return {Text: c.choices[0].text, Origin: location.origin, Backend: engine.info.backend};
	})()`, &r); err != nil {
		t.Fatalf("createEngine from another origin: %v", err)
	}
	want := generate(t, "-model", filepath.Join(models, "stories260K"), "-prompt", "Once upon a time", "-n", "24", "-temperature", "0")
	if r.Text != want.Text {
		t.Errorf("cross-origin reply %q\ngenerate           %q", r.Text, want.Text)
	}
	if len(srv.Requests("/worker.js")) == 0 || len(srv.Requests("/wasmllm.wasm")) == 0 {
		t.Errorf("the worker and the wasm were not fetched from the wasmllm server")
	}
	t.Logf("page %s imported %s/wasmllm.js (%s)", r.Origin, srv.URL, r.Backend)
}
