package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wasmllm/internal/testkit/browsertest"
)

// These tests drive web/remote.js: createEngine({endpoint}) speaking the
// OpenAI-compatible HTTP API, against the real go run . -api on the page's
// origin (the same client scenarios as the local engine), and against
// recorded vLLM shapes replayed through the real server's -upstream.

// clientScenarios runs on the page with a completion engine ec (stories260K)
// and a chat engine ecc (tiny-qwen3): completions and chat, stream and not,
// usage, the three ways of cancelling, engine.abort(), and a context error.
const clientScenarios = `(() => { window.scenarios = async (ec, ecc) => {
	const out = {};
	const prompt = "Once upon a time";
	const c = await ec.completions.create({prompt, max_tokens: 8, temperature: 0});
	out.completion = {object: c.object, text: c.choices[0].text, finish: c.choices[0].finish_reason, usage: c.usage};
	let text = "", usage = null, chunks = 0, finish = null;
	for await (const x of await ec.completions.create({prompt, max_tokens: 8, temperature: 0, stream: true, stream_options: {include_usage: true}})) {
		chunks++;
		if (x.choices[0]) { text += x.choices[0].text; finish = x.choices[0].finish_reason || finish; }
		if (x.usage) usage = x.usage;
	}
	out.stream = {text, usage, finish, chunks};
	const msgs = [{role: "user", content: "Hi"}];
	const r = await ecc.chat.completions.create({messages: msgs, max_tokens: 6, temperature: 0, chat_template_kwargs: {enable_thinking: false}});
	out.chat = {object: r.object, text: r.choices[0].message.content, role: r.choices[0].message.role, finish: r.choices[0].finish_reason, usage: r.usage};
	text = ""; usage = null; let role = "";
	for await (const x of await ecc.chat.completions.create({messages: msgs, max_tokens: 6, temperature: 0, chat_template_kwargs: {enable_thinking: false}, stream: true, stream_options: {include_usage: true}})) {
		const ch = x.choices[0];
		if (ch && ch.delta.role) role = ch.delta.role;
		if (ch && ch.delta.content) text += ch.delta.content;
		if (x.usage) usage = x.usage;
	}
	out.chatStream = {text, role, usage};
	// Cancelling.
	const long = {prompt, max_tokens: 400, temperature: 0, ignore_eos: true};
	let n = 0;
	for await (const x of await ec.completions.create({...long, stream: true})) { if (++n === 3) break; }
	out.afterBreak = (await ec.completions.create({prompt, max_tokens: 2, temperature: 0})).choices[0].finish_reason;
	let ac = new AbortController(); n = 0;
	const s = await ec.completions.create({...long, stream: true}, {signal: ac.signal});
	out.signalStream = await codeOf((async () => { for await (const x of s) { if (++n === 3) ac.abort(); } })());
	ac = new AbortController();
	const p = ec.completions.create(long, {signal: ac.signal});
	await sleep(30); ac.abort();
	out.signalPlain = await codeOf(p);
	n = 0; let abortFinish = null, abortText = "";
	for await (const x of await ec.completions.create({...long, stream: true})) {
		const ch = x.choices[0];
		if (ch && ch.text) abortText += ch.text;
		if (ch && ch.finish_reason) abortFinish = ch.finish_reason;
		if (++n === 3) ec.abort();
	}
	out.engineAbort = {finish: abortFinish, chunks: n};
	out.overflow = await codeOf(ec.completions.create({prompt: Array(5000).fill(100), max_tokens: 1}));
	out.after = (await ec.completions.create({prompt, max_tokens: 2, temperature: 0})).usage.completion_tokens;
	return out;
}; return true; })()`

type scenarioResult struct {
	Completion struct {
		Object, Text, Finish string
		Usage                map[string]any
	}
	Stream struct {
		Text, Finish string
		Usage        map[string]any
		Chunks       int
	}
	Chat struct {
		Object, Text, Role, Finish string
		Usage                      map[string]any
	}
	ChatStream struct {
		Text, Role string
		Usage      map[string]any
	}
	AfterBreak, SignalStream, SignalPlain, Overflow string
	EngineAbort                                     struct {
		Finish string
		Chunks int
	}
	After int
}

func checkScenarios(t *testing.T, which string, r scenarioResult) {
	t.Helper()
	if r.Completion.Object != "text_completion" || r.Completion.Text == "" || r.Completion.Usage["completion_tokens"] != float64(8) {
		t.Errorf("%s: completion %+v", which, r.Completion)
	}
	if r.Stream.Text != r.Completion.Text || r.Stream.Usage["completion_tokens"] != float64(8) || r.Stream.Finish != "length" {
		t.Errorf("%s: stream %+v, want the completion's text %q", which, r.Stream, r.Completion.Text)
	}
	if r.Chat.Object != "chat.completion" || r.Chat.Role != "assistant" || r.Chat.Usage["prompt_tokens"] == nil {
		t.Errorf("%s: chat %+v", which, r.Chat)
	}
	if r.ChatStream.Text != r.Chat.Text || r.ChatStream.Role != "assistant" || r.ChatStream.Usage == nil {
		t.Errorf("%s: chat stream %+v, want the chat's text %q", which, r.ChatStream, r.Chat.Text)
	}
	if r.AfterBreak != "length" || !strings.HasPrefix(r.SignalStream, "aborted") || !strings.HasPrefix(r.SignalPlain, "aborted") {
		t.Errorf("%s: cancelling: after break %q, signal on a stream %q, on a plain request %q", which, r.AfterBreak, r.SignalStream, r.SignalPlain)
	}
	if r.EngineAbort.Finish != "abort" || r.EngineAbort.Chunks > 100 {
		t.Errorf("%s: engine.abort(): %+v", which, r.EngineAbort)
	}
	if !strings.HasPrefix(r.Overflow, "context_overflow") {
		t.Errorf("%s: a prompt past the context: %q", which, r.Overflow)
	}
	if r.After != 2 {
		t.Errorf("%s: the request after: %d tokens", which, r.After)
	}
}

// TestRemoteEngineParity runs the same client code on the local engine and
// on createEngine({endpoint: "/v1"}) against go run . -api.
func TestRemoteEngineParity(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: compatModels(t), Args: []string{"-api"}})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	b.MustRun(pageHelpers, nil)
	b.MustRun(clientScenarios, nil)

	var local, remote scenarioResult
	b.MustRun(`(async () => {
		const ec = await wasmllm.createEngine({model: "/models/stories260K/", backend: "cpu"});
		const ecc = await wasmllm.createEngine({model: "/models/tiny-qwen3/", backend: "cpu"});
		const r = await scenarios(ec, ecc);
		await ec.unload(); await ecc.unload();
		return r;
	})()`, &local)
	checkScenarios(t, "local", local)

	var info map[string]any
	b.MustRun(`(async () => {
		window.rc = await wasmllm.createEngine({endpoint: "/v1", model: "stories260K"});
		window.rcc = await wasmllm.createEngine({endpoint: "/v1", model: "tiny-qwen3"});
		return rc.info;
	})()`, &info)
	if info["backend"] != "remote" || info["endpoint"] != srv.URL+"/v1" || info["model"].(map[string]any)["id"] != "stories260K" {
		t.Errorf("remote info: %v", info)
	}
	b.MustRun(`scenarios(rc, rcc)`, &remote)
	checkScenarios(t, "remote", remote)
	t.Logf("local:  %q / %q\nremote: %q / %q", local.Completion.Text, local.Chat.Text, remote.Completion.Text, remote.Chat.Text)
	if local.Completion.Text != remote.Completion.Text {
		t.Errorf("greedy completion: local %q, remote %q", local.Completion.Text, remote.Completion.Text)
	}

	// Unknown models: at createEngine and in a request.
	var errs struct{ Create, Request, Local string }
	b.MustRun(`(async () => ({
		Create: await codeOf(wasmllm.createEngine({endpoint: "/v1", model: "nope"})),
		Request: await codeOf(rc.completions.create({model: "nope", prompt: "x", max_tokens: 1})),
		Local: await codeOf(wasmllm.createEngine({model: "/models/nope/", backend: "cpu"})),
	}))()`, &errs)
	if !strings.HasPrefix(errs.Create, "bad_request") || !strings.HasSuffix(errs.Create, "[model]") ||
		!strings.HasPrefix(errs.Request, "bad_request") || !strings.HasPrefix(errs.Local, "network") {
		t.Errorf("unknown models: %+v", errs)
	}
}

// vllmChunks are chunk bodies as vLLM streams them (recorded shapes).
var vllmReasoning = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":{"reasoning_content":"Let me"},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":{"reasoning_content":" think."},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":{"content":[{"token":"Hello","logprob":-0.5,"bytes":[72,101,108,108,111],"top_logprobs":[]}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":{"content":"!"},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[],"usage":{"prompt_tokens":9,"total_tokens":14,"completion_tokens":5}}`,
}

var vllmTools = []string{
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-a1","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"qwen3","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}]}`,
}

const vllmContextError = `{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (1000 in the messages, 4000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}`

// fakeVLLM answers as vLLM does, the answer picked by the request's model.
func fakeVLLM(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var flaky atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"qwen3","object":"model","created":1700000000,"owned_by":"vllm","root":"Qwen/Qwen3-8B","parent":null,"max_model_len":4096,"permission":[]}]}`)
			return
		}
		var req struct {
			Model          string         `json:"model"`
			Stream         bool           `json:"stream"`
			ResponseFormat map[string]any `json:"response_format"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		sse := func(events []string) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				fmt.Fprintf(w, "data: %s\n\n", e)
				w.(http.Flusher).Flush()
			}
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/chat/completions") && req.ResponseFormat["type"] == "json_object":
			// The request passed through with its response_format.
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"chatcmpl-3","object":"chat.completion","created":1700000000,"model":"qwen3","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"ok","content":"{\"a\": 1}","tool_calls":[]},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":3,"total_tokens":8,"completion_tokens":5}}`)
		case req.Model == "reasoning":
			sse(append(vllmReasoning, "[DONE]"))
		case req.Model == "tools":
			sse(append(vllmTools, "[DONE]"))
		case req.Model == "error-event":
			sse([]string{vllmReasoning[0], `{"error":{"object":"error","message":"the engine died","type":"InternalServerError","param":null,"code":500}}`})
		case req.Model == "ctx":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, vllmContextError)
		case req.Model == "flaky":
			if flaky.Add(1) == 1 {
				w.WriteHeader(503)
				io.WriteString(w, `{"error":{"message":"busy","type":"ServiceUnavailableError","param":null,"code":503}}`)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"cmpl-4","object":"text_completion","created":1700000000,"model":"qwen3","choices":[{"index":0,"text":" there","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":1,"total_tokens":3,"completion_tokens":2}}`)
		case req.Model == "split":
			// One event cut across writes, CRLF lines, a comment, a
			// multi-line data field.
			w.Header().Set("Content-Type", "text/event-stream")
			parts := []string{": ping\r\n\r\n", `data: {"id":"c","object":"text_completion","created":1,"model":"qwen3","choices":[{"index":0,"text":"A","lo`,
				"gprobs\":null,\"finish_reason\":null}]}\r\n\r\ndata: {\"id\":\"c\",\"object\":\"text_completion\",\"created\":1,\n",
				"data: \"model\":\"qwen3\",\"choices\":[{\"index\":0,\"text\":\"B\",\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n", "data: [DONE]\n\n"}
			for _, p := range parts {
				io.WriteString(w, p)
				w.(http.Flusher).Flush()
			}
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			fmt.Fprintf(w, `{"error":{"message":"The model %s does not exist.","type":"NotFoundError","param":"model","code":404}}`, req.Model)
		}
	}))
	t.Cleanup(ts.Close)
	return ts, &flaky
}

// TestRemoteEngineContract replays vLLM's shapes through -upstream and
// checks the objects the client hands the page.
func TestRemoteEngineContract(t *testing.T) {
	skipShort(t)
	fake, flaky := fakeVLLM(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Args: []string{"-upstream", fake.URL}})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	b.MustRun(pageHelpers, nil)
	var got struct {
		Info                            map[string]any
		Reasoning, Content, Args, Name  string
		Finish, ToolFinish              string
		Usage                           map[string]any
		Logprob                         float64
		JSON                            map[string]any
		ErrorEvent, Ctx, Unknown, Flaky string
		FlakyText                       string
		Split                           string
	}
	b.MustRun(`(async () => {
		const out = {};
		const e = await wasmllm.createEngine({endpoint: "/v1"});
		out.Info = e.info;
		const msgs = [{role: "user", content: "Hi"}];
		out.Reasoning = ""; out.Content = "";
		for await (const c of await e.chat.completions.create({model: "reasoning", messages: msgs, stream: true, stream_options: {include_usage: true}})) {
			const ch = c.choices[0];
			if (ch && ch.delta.reasoning_content) out.Reasoning += ch.delta.reasoning_content;
			if (ch && ch.delta.content) out.Content += ch.delta.content;
			if (ch && ch.finish_reason) out.Finish = ch.finish_reason;
			if (ch && ch.logprobs) out.Logprob = ch.logprobs.content[0].logprob;
			if (c.usage) out.Usage = c.usage;
		}
		out.Args = ""; out.Name = "";
		for await (const c of await e.chat.completions.create({model: "tools", messages: msgs, stream: true, tools: [{type: "function", function: {name: "get_weather"}}], tool_choice: "required"})) {
			const ch = c.choices[0];
			for (const tc of (ch && ch.delta.tool_calls) || []) {
				if (tc.function.name) out.Name = tc.function.name;
				out.Args += tc.function.arguments || "";
			}
			if (ch && ch.finish_reason) out.ToolFinish = ch.finish_reason;
		}
		const j = await e.chat.completions.create({messages: msgs, response_format: {type: "json_object"}});
		out.JSON = {content: j.choices[0].message.content, reasoning: j.choices[0].message.reasoning_content, usage: j.usage.total_tokens};
		out.ErrorEvent = await codeOf((async () => { for await (const c of await e.chat.completions.create({model: "error-event", messages: msgs, stream: true})) {} })());
		out.Ctx = await codeOf(e.chat.completions.create({model: "ctx", messages: msgs}));
		try { await e.chat.completions.create({model: "ctx", messages: msgs}); } catch (err) { out.Ctx += " " + err.details.context_length + " " + err.details.prompt_tokens; }
		out.Unknown = await codeOf(e.chat.completions.create({model: "gone", messages: msgs, stream: true}));
		const f = await e.completions.create({model: "flaky", prompt: "Hi"});
		out.Flaky = f.choices[0].finish_reason; out.FlakyText = f.choices[0].text;
		out.Split = "";
		for await (const c of await e.completions.create({model: "split", prompt: "x", stream: true})) out.Split += c.choices[0].text + "|" + (c.choices[0].finish_reason || "") + ";";
		return out;
	})()`, &got)
	t.Logf("%+v", got)
	if got.Info["backend"] != "remote" || got.Info["context_length"] != float64(4096) || got.Info["model"].(map[string]any)["id"] != "qwen3" {
		t.Errorf("info %v", got.Info)
	}
	if got.Reasoning != "Let me think." || got.Content != "Hello!" || got.Finish != "stop" || got.Logprob != -0.5 || got.Usage["total_tokens"] != float64(14) {
		t.Errorf("reasoning stream: %+v", got)
	}
	if got.Name != "get_weather" || got.Args != `{"city": "Paris"}` || got.ToolFinish != "tool_calls" {
		t.Errorf("tool calls: name %q args %q finish %q", got.Name, got.Args, got.ToolFinish)
	}
	if got.JSON["content"] != `{"a": 1}` || got.JSON["reasoning"] != "ok" || got.JSON["usage"] != float64(8) {
		t.Errorf("json_object: %v", got.JSON)
	}
	if !strings.HasPrefix(got.ErrorEvent, "network: the engine died") {
		t.Errorf("an error event: %q", got.ErrorEvent)
	}
	if !strings.HasPrefix(got.Ctx, "context_overflow") || !strings.HasSuffix(got.Ctx, " 4096 1000") {
		t.Errorf("the context error: %q", got.Ctx)
	}
	if !strings.HasPrefix(got.Unknown, "bad_request: The model gone does not exist. [model]") {
		t.Errorf("an unknown model: %q", got.Unknown)
	}
	if got.Flaky != "length" || got.FlakyText != " there" || flaky.Load() != 2 {
		t.Errorf("a 503 then an answer: %q %q after %d tries", got.Flaky, got.FlakyText, flaky.Load())
	}
	if got.Split != "A|;B|stop;" {
		t.Errorf("events split across reads: %q", got.Split)
	}
}

// TestRemoteChatPage: the chat page and <wasmllm-chat> chat with a model of
// go run . -api (server A) through server B's -upstream, streaming, and
// Stop ends a reply with finish_reason "abort".
func TestRemoteChatPage(t *testing.T) {
	skipShort(t)
	a := browsertest.StartServer(t, browsertest.ServerOptions{Models: compatModels(t), Args: []string{"-api"}})
	web := browsertest.WebDir(t, map[string]string{"embed.html": `<!doctype html><meta charset="utf-8">
<script type="module" src="wasmllm-chat.js"></script>
<script>window.pageReady = true;</script>
<wasmllm-chat endpoint="/v1" model="tiny-qwen3" max-tokens="0" thinking="off"></wasmllm-chat>`})
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Web: web, Args: []string{"-upstream", a.URL + "/v1"}})
	b := browsertest.NewBrowser(t)

	// The page, with ?endpoint=/v1&model=ID.
	openPage(t, b, srv.URL+"/?endpoint=/v1&model=tiny-qwen3")
	var shown struct{ Backend, Picked string }
	b.MustRun(`({Backend: wasmllmApp.info.backend, Picked: document.getElementById("model").value})`, &shown)
	if shown.Backend != "remote" || shown.Picked != "tiny-qwen3 (remote)" {
		t.Errorf("the page loaded %+v", shown)
	}
	b.MustRun(`document.getElementById("max_tokens").value = "12"`, nil)
	typeMessage(t, b, "Hi")
	r := waitReply(t, b, 1)
	if r.Text == "" || r.Chunks < 2 || r.Usage.CompletionTokens == 0 {
		t.Errorf("the remote reply: %+v", r)
	}
	// Stop: no token limit (until the context is full), stopped after a few chunks.
	b.MustRun(`document.getElementById("max_tokens").value = "0"`, nil)
	typeMessage(t, b, "Tell me more")
	if err := b.WaitFor(`wasmllmApp.chunks >= 3`, replyTimeout, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Click("[data-testid=stop]"); err != nil {
		t.Fatal(err)
	}
	r = waitReply(t, b, 2)
	if r.FinishReason != "abort" || r.Text == "" {
		t.Errorf("the stopped remote reply: %+v", r)
	}
	if got := len(a.Requests("/v1/chat/completions")); got < 1 {
		t.Errorf("server A logged %d chat requests", got)
	}
	// The listing offers the origin's /v1 models too.
	b.Open(srv.URL + "/")
	if err := b.WaitFor(`[...document.getElementById("model").options].some((o) => o.value === "stories260K (remote)")`, time.Minute, nil); err != nil {
		t.Fatal(err)
	}

	// The element, with endpoint="/v1".
	b.Open(srv.URL + "/embed.html")
	const el = `document.querySelector("wasmllm-chat")`
	if err := b.WaitFor(el+`.shadowRoot.querySelector("[data-testid=status]").textContent === "ready"`, time.Minute, nil); err != nil {
		var status string
		b.Run(el+`.shadowRoot.querySelector(".bar").textContent`, &status)
		t.Fatalf("%v (status %q)", err, status)
	}
	var er struct {
		Text, Finish string
		Backend      string
	}
	b.MustRun(`(async () => { const e = `+el+`; e.setAttribute("max-tokens", "10"); const r = await e.send("Hi");
		return {Text: r.text, Finish: r.finish_reason, Backend: e.engine.info.backend}; })()`, &er)
	if er.Text == "" || er.Backend != "remote" {
		t.Errorf("the element's remote reply: %+v", er)
	}
	b.MustRun(`(async () => { const e = `+el+`; e.setAttribute("max-tokens", "0");
		const p = e.send("More"); while (!e.shadowRoot.querySelectorAll("[data-testid=assistant]")[1]?.textContent) await new Promise((r) => setTimeout(r, 5));
		e.stop(); const r = await p; return {Text: r.text, Finish: r.finish_reason, Backend: e.engine.info.backend}; })()`, &er)
	if er.Finish != "abort" {
		t.Errorf("the element's stopped reply: %+v", er)
	}
}

// TestRemoteOffer: a local model that does not fit (the check before any
// download says model_too_large) is offered by the server under the same
// name; the page's notice has a button that loads the remote one. (The
// link only preselects the 3 GiB model: the user presses Load first.)
func TestRemoteOffer(t *testing.T) {
	skipShort(t)
	remote := compatModels(t)
	a := browsertest.StartServer(t, browsertest.ServerOptions{Models: remote, Args: []string{"-api"}})
	local := t.TempDir()
	src, err := os.ReadFile(filepath.Join(remote, "tiny-qwen3", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(src, &m); err != nil {
		t.Fatal(err)
	}
	// Three 1 GiB tensors: more than the page's wasm heap holds, so the
	// check made before downloading refuses them (nothing is fetched).
	var shards, tensors []any
	for i := 0; i < 3; i++ {
		sum := strings.Repeat(fmt.Sprintf("%x", i+1), 64)
		shards = append(shards, map[string]any{"file": fmt.Sprintf("shard-%05d-%s.bin", i, sum[:16]), "bytes": 1 << 30, "sha256": sum})
		tensors = append(tensors, map[string]any{"name": fmt.Sprintf("big.%d", i), "dtype": "F32", "shape": []int{1 << 28}, "shard": i, "offset": 0, "bytes": 1 << 30})
	}
	m["shards"], m["tensors"] = shards, tensors
	big, _ := json.Marshal(m)
	if err := os.MkdirAll(filepath.Join(local, "tiny-qwen3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "tiny-qwen3", "manifest.json"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: local, Args: []string{"-upstream", a.URL + "/v1"}})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/?model=tiny-qwen3&backend=cpu")
	// Over 64 MiB: the link only preselects it; Load goes on.
	if err := b.WaitFor(`!document.querySelector("[data-testid=load]").hidden`, time.Minute, nil); err != nil {
		t.Fatalf("the page does not ask before a 3 GiB download: %v", err)
	}
	if err := b.Click("[data-testid=load]"); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(`!!document.querySelector("[data-testid=use-remote]")`, time.Minute, nil); err != nil {
		var notice, status string
		b.Run(`document.getElementById("notice").textContent`, &notice)
		b.Run(`document.querySelector("[data-testid=status]") && document.querySelector("[data-testid=status]").textContent`, &status)
		t.Fatalf("no offer of the remote model: %v (notice %q, status %q)", err, notice, status)
	}
	if got := srv.Requests(".bin "); len(got) != 0 {
		t.Errorf("shards fetched for a model that does not fit: %v", got)
	}
	if err := b.Click("[data-testid=use-remote]"); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(`wasmllmApp.info && wasmllmApp.info.backend === "remote"`, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	b.MustRun(`document.getElementById("max_tokens").value = "8"`, nil)
	typeMessage(t, b, "Hi")
	if r := waitReply(t, b, 1); r.Text == "" || r.Usage.CompletionTokens == 0 {
		t.Errorf("the remote reply: %+v", r)
	}
}

// TestReasoningContentShown: a server's delta.reasoning_content (vLLM's
// reasoning parser) is shown as the model's thinking, folded, and kept out
// of the conversation sent back.
func TestReasoningContentShown(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	var got struct {
		Text, Content, Reasoning, Summary, Answer string
		Sent                                      []map[string]any
	}
	b.MustRun(`(async () => {
		const chat = await import("./chat.js");
		const chunks = [{reasoning_content: "Let me"}, {reasoning_content: " think."}, {content: "Hello"}, {content: " there."}];
		let sent = null;
		const engine = {info: {model: {has_chat_template: true}}, chat: {completions: {create: async (req) => {
			sent = req.messages;
			return (async function* () {
				for (const d of chunks) yield {choices: [{index: 0, delta: d, finish_reason: null}]};
				yield {choices: [{index: 0, delta: {}, finish_reason: "stop"}]};
			})();
		}}}};
		const conv = new chat.Conversation(engine, {chat: true, thinking: false});
		const r = await conv.send("Hi", {}, null);
		const el = document.createElement("div");
		chat.renderReply(el, r.text, {final: true});
		await conv.send("Again", {}, null);
		return {Text: r.text, Content: r.content, Reasoning: r.reasoning_content, Sent: sent,
			Summary: el.querySelector("details.thinking summary").textContent, Answer: el.querySelector(".answer").textContent};
	})()`, &got)
	if got.Reasoning != "Let me think." || got.Content != "Hello there." || got.Answer != "Hello there." || got.Summary != "Thought" {
		t.Errorf("shown %+v", got)
	}
	if len(got.Sent) != 3 || got.Sent[1]["content"] != "Hello there." {
		t.Errorf("the next request sent %v, want the answer without the thinking", got.Sent)
	}
}
