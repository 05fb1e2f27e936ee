package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit/browsertest"
)

// These tests run pages written against WebLLM's API (@mlc-ai/web-llm)
// with only the import line changed to wasmllm's web/webllm.js, in
// headless Chromium against the real server.

// webllmModel is the folder name the example pages load: a WebLLM
// prebuilt model id, which with no appConfig webllm.js looks up as
// models/<id>/ beside itself. The folder holds tiny-qwen3 (a Qwen3 with
// random weights and the Qwen3 chat template).
const webllmModel = "Qwen3-0.6B-q4f16_1-MLC"

// webllmModels returns a models folder with stories260K and tiny-qwen3 as
// webllmModel and as tiny-qwen3.
func webllmModels(t *testing.T) string {
	t.Helper()
	models := compatModels(t)
	browsertest.Convert(t, browsertest.RepoFile("testdata/hf/tiny-qwen3"), filepath.Join(models, webllmModel),
		browsertest.ConvertOptions{Tokenizer: browsertest.ChatTokenizer(t, "tiny-qwen3")})
	return models
}

// observe is the test's own script, put before an example's: it records
// what the example logs (console.log arguments, as JSON) and every text
// its labels show, and marks the page ready for the test driver.
const observe = `<script>
window.logged = [];
window.labels = {};
window.failed = null;
const log = console.log.bind(console);
console.log = (...args) => { window.logged.push(JSON.parse(JSON.stringify(args, (k, v) => v === undefined ? null : v))); log(...args); };
window.addEventListener("unhandledrejection", (e) => { window.failed = String(e.reason && (e.reason.code ? e.reason.code + ": " : "") + (e.reason && e.reason.message || e.reason)); });
window.addEventListener("error", (e) => { window.failed = String(e.message); });
new MutationObserver((ms) => { for (const m of ms) { const el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
	if (el && el.id) (window.labels[el.id] ||= []).push(el.innerText); } })
	.observe(document.documentElement, { subtree: true, childList: true, characterData: true });
window.pageReady = true;
</script>
`

// The pages below are written the way WebLLM's examples (get-started,
// streaming, get-started-web-worker) write them: the same calls, options
// and flow; the import names ./webllm.js instead of "@mlc-ai/web-llm".

const getStartedPage = `<!doctype html>
<html>
  <body>
    <h2>WebLLM Test Page</h2>
    Open console to see output
    <br />
    <label id="init-label"> </label>
    <h3>Prompt</h3>
    <label id="prompt-label"> </label>
    <h3>Response</h3>
    <label id="generate-label"> </label>
    <br />
    <label id="stats-label"> </label>
` + observe + `
    <script type="module">
import * as webllm from "./webllm.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) {
    throw Error("Cannot find label " + id);
  }
  label.innerText = text;
}

async function main() {
  const initProgressCallback = (report) => {
    setLabel("init-label", report.text);
  };
  const selectedModel = "` + webllmModel + `";
  const engine = await webllm.CreateMLCEngine(
    selectedModel,
    { initProgressCallback: initProgressCallback, logLevel: "INFO" },
    { context_window_size: 2048 },
  );

  const reply0 = await engine.chat.completions.create({
    messages: [{ role: "user", content: "List three US states." }],
    n: 3,
    temperature: 1.5,
    max_tokens: 256,
    // never token 46, more often 71 and 300
    logit_bias: { "46": -100, "71": 5, "300": 5 },
    logprobs: true,
    top_logprobs: 2,
  });
  console.log(reply0);
  console.log(reply0.usage);
  setLabel("stats-label", await engine.runtimeStatsText());
}

main();
    </script>
  </body>
</html>
`

const streamingPage = `<!doctype html>
<html>
  <body>
    <h2>WebLLM Test Page</h2>
    Open console to see output
    <br />
    <label id="init-label"> </label>
    <h3>Response</h3>
    <label id="generate-label"> </label>
` + observe + `
    <script type="module">
import * as webllm from "./webllm.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) {
    throw Error("Cannot find label " + id);
  }
  label.innerText = text;
}

async function main() {
  const initProgressCallback = (report) => {
    setLabel("init-label", report.text);
  };
  const selectedModel = "` + webllmModel + `";
  const engine = await webllm.CreateMLCEngine(selectedModel, {
    initProgressCallback: initProgressCallback,
  });

  const request = {
    stream: true,
    stream_options: { include_usage: true },
    messages: [
      { role: "system", content: "You are a pirate chatbot who always responds in pirate speak!" },
      { role: "user", content: "Who are you?" },
    ],
    logprobs: true,
    top_logprobs: 2,
  };

  const asyncChunkGenerator = await engine.chat.completions.create(request);
  let message = "";
  for await (const chunk of asyncChunkGenerator) {
    console.log(chunk);
    message += chunk.choices[0]?.delta?.content || "";
    setLabel("generate-label", message);
    if (chunk.usage) {
      console.log(chunk.usage); // only last chunk has usage
    }
  }
  console.log("Final message:\n", await engine.getMessage());
}

main();
    </script>
  </body>
</html>
`

const workerMainPage = `<!doctype html>
<html>
  <body>
    <label id="init-label"> </label>
    <label id="generate-label"> </label>
` + observe + `
    <script type="module">
import * as webllm from "./webllm.js";

function setLabel(id, text) {
  document.getElementById(id).innerText = text;
}

async function main() {
  const initProgressCallback = (report) => {
    setLabel("init-label", report.text);
  };
  const engine = await webllm.CreateWebWorkerMLCEngine(
    new Worker(new URL("./webllm-example-worker.js", import.meta.url), { type: "module" }),
    "` + webllmModel + `",
    { initProgressCallback: initProgressCallback },
  );
  const reply0 = await engine.chat.completions.create({
    messages: [
      { role: "system", content: "You are a helpful, respectful and honest assistant." },
      { role: "user", content: "Provide me three US states." },
      { role: "assistant", content: "California, New York, Pennsylvania." },
      { role: "user", content: "Two more please!" },
    ],
    n: 3,
    temperature: 1.5,
    max_tokens: 32,
  });
  console.log(reply0);
  console.log(reply0.usage);

  const chunks = await engine.chat.completions.create({
    messages: [{ role: "user", content: "Tell me a story." }],
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: 300,
    temperature: 0,
  });
  let reply = "";
  let n = 0;
  for await (const chunk of chunks) {
    reply += chunk.choices[0]?.delta.content || "";
    setLabel("generate-label", reply);
    if (++n === 4) break;
  }
  console.log(reply, await engine.getMessage());
  console.log(await engine.runtimeStatsText());
  const next = await engine.chat.completions.create({ messages: [{ role: "user", content: "Hi" }], max_tokens: 1 });
  console.log(next.usage);
}

main();
    </script>
  </body>
</html>
`

const workerScript = `import { WebWorkerMLCEngineHandler } from "./webllm.js";

// Hook up an engine to a worker handler
const handler = new WebWorkerMLCEngineHandler();
self.onmessage = (msg) => {
  handler.onmessage(msg);
};
`

// examplePages are served beside webllm.js.
var examplePages = map[string]string{
	"webllm-get-started.html":  getStartedPage,
	"webllm-streaming.html":    streamingPage,
	"webllm-worker.html":       workerMainPage,
	"webllm-example-worker.js": workerScript,
	"webllm-api.html":          apiPage,
}

const apiPage = `<!doctype html>
<meta charset="utf-8">
<script type="module">
import * as webllm from "./webllm.js";
window.webllm = webllm;
window.pageReady = true;
</script>
`

// openExample opens an example page and waits until it has logged n
// times (or failed).
func openExample(t *testing.T, b *browsertest.Browser, url string, n int) [][]json.RawMessage {
	t.Helper()
	b.Open(url)
	var state struct {
		N      int    `json:"n"`
		Failed string `json:"failed"`
	}
	if err := b.WaitFor(`(window.failed || window.logged.length >= `+itoa(n)+`) && {n: window.logged.length, failed: window.failed || ""}`, 4*time.Minute, &state); err != nil {
		var labels any
		b.Run(`window.labels`, &labels)
		t.Fatalf("%s: %v (labels %v)", url, err, labels)
	}
	if state.Failed != "" {
		t.Fatalf("%s failed: %s", url, state.Failed)
	}
	var logged [][]json.RawMessage
	b.MustRun(`window.logged`, &logged)
	return logged
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// webllmUsage is WebLLM's usage block.
type webllmUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	Extra            *struct {
		E2E           float64 `json:"e2e_latency_s"`
		PrefillPerSec float64 `json:"prefill_tokens_per_s"`
		DecodePerSec  float64 `json:"decode_tokens_per_s"`
		TimeToFirst   float64 `json:"time_to_first_token_s"`
		TimePerOutput float64 `json:"time_per_output_token_s"`
	} `json:"extra"`
}

func (u *webllmUsage) check(t *testing.T, what string) {
	t.Helper()
	if u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.Extra == nil ||
		u.Extra.E2E <= 0 || u.Extra.PrefillPerSec <= 0 || u.Extra.TimeToFirst <= 0 || u.Extra.TimePerOutput <= 0 ||
		(u.CompletionTokens > 1 && u.Extra.DecodePerSec <= 0) {
		t.Errorf("%s: usage %+v extra %+v", what, u, u.Extra)
	}
}

type webllmChoice struct {
	Index        int    `json:"index"`
	FinishReason string `json:"finish_reason"`
	Message      *struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	Delta *struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"delta"`
	Logprobs *struct {
		Content []struct {
			Token       string `json:"token"`
			TopLogprobs []struct {
				Token string `json:"token"`
			} `json:"top_logprobs"`
		} `json:"content"`
	} `json:"logprobs"`
}

type webllmResponse struct {
	Object  string         `json:"object"`
	Model   string         `json:"model"`
	Choices []webllmChoice `json:"choices"`
	Usage   *webllmUsage   `json:"usage"`
}

// TestWebLLMGetStarted runs a page written as WebLLM's get-started example
// (CreateMLCEngine with initProgressCallback, logLevel and
// context_window_size; one chat completion with n: 3, logit_bias, logprobs
// and top_logprobs), only its import line changed.
func TestWebLLMGetStarted(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: webllmModels(t), Web: browsertest.WebDir(t, examplePages)})
	b := browsertest.NewBrowser(t)
	logged := openExample(t, b, srv.URL+"/webllm-get-started.html", 2)
	var reply webllmResponse
	if err := json.Unmarshal(logged[0][0], &reply); err != nil {
		t.Fatal(err)
	}
	if reply.Object != "chat.completion" || reply.Model != webllmModel || len(reply.Choices) != 3 || reply.Usage == nil {
		t.Fatalf("reply %+v", reply)
	}
	for i, c := range reply.Choices {
		if c.Index != i || c.Message == nil || c.Message.Role != "assistant" || c.Logprobs == nil || len(c.Logprobs.Content) == 0 ||
			len(c.Logprobs.Content[0].TopLogprobs) != 2 || (c.FinishReason != "stop" && c.FinishReason != "length") {
			t.Errorf("choice %d: %+v", i, c)
		}
	}
	reply.Usage.check(t, "reply0")
	var usage webllmUsage
	json.Unmarshal(logged[1][0], &usage)
	if usage.CompletionTokens != reply.Usage.CompletionTokens {
		t.Errorf("console.log(reply0.usage) %+v", usage)
	}
	var labels map[string][]string
	b.MustRun(`window.labels`, &labels)
	init := labels["init-label"]
	if len(init) == 0 || !strings.HasPrefix(init[len(init)-1], "Finish loading on ") {
		t.Errorf("init-label showed %q", init)
	}
	if b.WaitFor(`document.getElementById("stats-label").innerText.startsWith("prefill")`, time.Minute, nil) != nil {
		t.Error("runtimeStatsText never reached the page")
	}
	var stats string
	b.MustRun(`document.getElementById("stats-label").innerText`, &stats)
	if !regexp.MustCompile(`^prefill: \d+\.\d{4} tokens/sec, decoding: \d+\.\d{4} tokens/sec$`).MatchString(stats) {
		t.Errorf("runtimeStatsText %q", stats)
	}
	t.Logf("init: %q; %d tokens in 3 choices; %s", init[len(init)-1], reply.Usage.CompletionTokens, stats)
}

// TestWebLLMStreaming runs a page written as WebLLM's streaming example:
// deltas concatenate to getMessage(), usage (with extra) comes only in the
// last chunk, which has no choices.
func TestWebLLMStreaming(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: webllmModels(t), Web: browsertest.WebDir(t, examplePages)})
	b := browsertest.NewBrowser(t)
	// The example samples without a seed, and the tiny random model ends
	// its reply at once about one time in a hundred (an end token first,
	// or after a byte that starts a character): then the page runs again,
	// as a user would ask again.
	for attempt := 1; ; attempt++ {
		b.Open(srv.URL + "/webllm-streaming.html")
		if err := b.WaitFor(`window.failed || window.logged.some((a) => a[0] === "Final message:\n")`, 4*time.Minute, nil); err != nil {
			t.Fatal(err)
		}
		var empty bool
		b.MustRun(`!window.failed && window.logged.some((a) => a[0] === "Final message:\n" && a[1] === "")`, &empty)
		if !empty || attempt == 3 {
			break
		}
		t.Logf("attempt %d: the model ended its reply with no text; again", attempt)
	}
	var failed string
	b.MustRun(`window.failed || ""`, &failed)
	if failed != "" {
		t.Fatalf("the page failed: %s", failed)
	}
	var logged [][]json.RawMessage
	b.MustRun(`window.logged`, &logged)
	var text, final string
	var usage *webllmUsage
	chunks := 0
	for i, args := range logged {
		var first string
		if json.Unmarshal(args[0], &first) == nil && first == "Final message:\n" {
			json.Unmarshal(args[1], &final)
			if i != len(logged)-1 {
				t.Errorf("the final message was logged at %d of %d", i, len(logged))
			}
			continue
		}
		var c webllmResponse
		if err := json.Unmarshal(args[0], &c); err != nil || c.Object == "" {
			// console.log(chunk.usage)
			var u webllmUsage
			if json.Unmarshal(args[0], &u) != nil || usage == nil || u.CompletionTokens != usage.CompletionTokens {
				t.Errorf("log %d: %s", i, args[0])
			}
			continue
		}
		chunks++
		if c.Object != "chat.completion.chunk" || c.Model != webllmModel {
			t.Errorf("chunk %d: %+v", i, c)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 || usage != nil {
				t.Errorf("usage in chunk %d, with %d choices", i, len(c.Choices))
			}
			usage = c.Usage
			continue
		}
		if usage != nil {
			t.Errorf("chunk %d after the usage chunk", i)
		}
		if len(c.Choices) == 1 && c.Choices[0].Delta != nil {
			text += c.Choices[0].Delta.Content
		}
	}
	if usage == nil {
		t.Fatal("no usage chunk")
	}
	usage.check(t, "stream")
	if final != text || text == "" {
		t.Errorf("getMessage() %q, the deltas %q", final, text)
	}
	var shown string
	b.MustRun(`document.getElementById("generate-label").innerText`, &shown)
	// innerText renders whitespace its own way: compare the rest.
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if squash(shown) != squash(text) {
		t.Errorf("label %q, text %q", shown, text)
	}
	t.Logf("%d chunks, %d tokens, decode %.0f tok/s", chunks, usage.CompletionTokens, usage.Extra.DecodePerSec)
}

// TestWebLLMWebWorker runs a page written as WebLLM's web-worker example:
// CreateWebWorkerMLCEngine over a module worker whose script runs
// WebWorkerMLCEngineHandler; n: 3, a stream left after 4 chunks (which
// cancels it in the engine), getMessage, runtimeStatsText.
func TestWebLLMWebWorker(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: webllmModels(t), Web: browsertest.WebDir(t, examplePages)})
	b := browsertest.NewBrowser(t)
	logged := openExample(t, b, srv.URL+"/webllm-worker.html", 5)
	var reply webllmResponse
	json.Unmarshal(logged[0][0], &reply)
	if len(reply.Choices) != 3 || reply.Usage == nil || reply.Model != webllmModel {
		t.Fatalf("reply %s", logged[0][0])
	}
	reply.Usage.check(t, "worker reply")
	var streamed, message string
	json.Unmarshal(logged[2][0], &streamed)
	json.Unmarshal(logged[2][1], &message)
	if streamed == "" || !strings.HasPrefix(message, streamed) {
		t.Errorf("streamed %q, getMessage %q", streamed, message)
	}
	// The stream was left after 4 chunks: the engine stopped it, so the
	// message is a few tokens, not 300.
	var stats string
	json.Unmarshal(logged[3][0], &stats)
	var next webllmUsage
	json.Unmarshal(logged[4][0], &next)
	if next.CompletionTokens != 1 {
		t.Errorf("the request after the stream: %s", logged[4][0])
	}
	var init []string
	b.MustRun(`window.labels["init-label"] || []`, &init)
	if len(init) < 2 || !strings.HasPrefix(init[len(init)-1], "Finish loading on ") {
		t.Errorf("progress in the page: %q", init)
	}
	t.Logf("worker: %q; %s", init[len(init)-1], stats)
}

// TestWebLLMEngine checks the rest of the WebLLM surface on one page:
// progress reports, reload(id) switching models, two models in one engine
// (request.model), appConfig, resetChat, interruptGenerate, getMessage,
// usage.extra in streams, chatOpts defaults, the LogitProcessor registry,
// and the errors WebLLM raises.
func TestWebLLMEngine(t *testing.T) {
	skipShort(t)
	models := webllmModels(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models, Web: browsertest.WebDir(t, examplePages)})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/webllm-api.html")
	b.MustRun(pageHelpers, nil)

	var load struct {
		Reports []struct {
			Progress    float64 `json:"progress"`
			TimeElapsed float64 `json:"timeElapsed"`
			Text        string  `json:"text"`
		} `json:"reports"`
		Story, Model string
	}
	b.MustRun(`(async () => {
		const reports = [];
		window.engine = await webllm.CreateMLCEngine("stories260K", {initProgressCallback: (r) => reports.push(r)}, {temperature: 0});
		const r = await engine.completions.create({prompt: "Once upon a time", max_tokens: 16});
		return {reports, Story: r.choices[0].text, Model: r.model};
	})()`, &load)
	rs := load.Reports
	if len(rs) < 2 || rs[0].Progress != 0 || rs[len(rs)-1].Progress != 1 || !strings.HasPrefix(rs[len(rs)-1].Text, "Finish loading on ") {
		t.Errorf("progress reports %+v", rs)
	}
	for i := 1; i < len(rs); i++ {
		if rs[i].Progress < rs[i-1].Progress || rs[i].TimeElapsed < rs[i-1].TimeElapsed || rs[i].Text == "" {
			t.Errorf("report %d %+v after %+v", i, rs[i], rs[i-1])
		}
	}
	// chatOpts {temperature: 0} is the default of every request: greedy.
	want := generate(t, "-model", filepath.Join(models, "stories260K"), "-prompt", "Once upon a time", "-n", "16", "-temperature", "0")
	if load.Story != want.Text || load.Model != "stories260K" {
		t.Errorf("stories260K with chatOpts temperature 0: %q (%s), generate %q", load.Story, load.Model, want.Text)
	}

	var sw map[string]any
	b.MustRun(`(async () => {
		const out = {};
		await engine.reload("tiny-qwen3");
		out.after = engine.engineOf().info.model.url;
		out.chat = (await engine.chat.completions.create({messages: [{role: "user", content: "Hi"}], max_tokens: 4})).model;
		out.old = await codeOf(engine.completions.create({model: "stories260K", prompt: "x", max_tokens: 1}));
		await engine.reload(["stories260K", "tiny-qwen3"], [{temperature: 0}, {}]);
		out.both_story = (await engine.completions.create({model: "stories260K", prompt: "Once upon a time", max_tokens: 16})).choices[0].text;
		out.both_chat = (await engine.chat.completions.create({model: "tiny-qwen3", messages: [{role: "user", content: "Hi"}], max_tokens: 4})).model;
		out.unclear = await codeOf(engine.completions.create({prompt: "x", max_tokens: 1}));
		out.unknown = await codeOf(engine.completions.create({model: "nope", prompt: "x", max_tokens: 1}));
		out.workers = new Set([engine.engineOf("stories260K"), engine.engineOf("tiny-qwen3")]).size;
		out.missing = await codeOf(engine.reload("no-such-model-folder"));
		out.dup = await codeOf(engine.reload(["tiny-qwen3", "tiny-qwen3"]));
		const custom = new webllm.MLCEngine({appConfig: {model_list: [{model_id: "story", model: "/models/stories260K/", model_lib: "ignored"}]}});
		await custom.reload("story");
		out.custom = (await custom.completions.create({prompt: "Once upon a time", max_tokens: 16, temperature: 0})).choices[0].text;
		out.custom_strict = await codeOf(custom.reload("tiny-qwen3"));
		await custom.unload();
		out.unloaded = await codeOf(custom.completions.create({prompt: "x"}));
		return out;
	})()`, &sw)
	if !strings.HasSuffix(sw["after"].(string), "/models/tiny-qwen3/") || sw["chat"] != "tiny-qwen3" || !strings.HasPrefix(sw["old"].(string), "bad_request") {
		t.Errorf("reload(id) did not switch models: %v", sw)
	}
	if sw["both_story"] != want.Text || sw["both_chat"] != "tiny-qwen3" || sw["workers"] != 2.0 {
		t.Errorf("two models in one engine: %v", sw)
	}
	for _, k := range []string{"unclear", "unknown", "dup", "custom_strict"} {
		if !strings.HasPrefix(sw[k].(string), "bad_request") {
			t.Errorf("%s: %v, want bad_request", k, sw[k])
		}
	}
	// An id prebuiltAppConfig does not list is the folder models/<id>/: a 404 here.
	if !strings.HasPrefix(sw["missing"].(string), "network") {
		t.Errorf("missing: %v", sw["missing"])
	}
	if sw["custom"] != want.Text || !strings.HasPrefix(sw["unloaded"].(string), "not_loaded") {
		t.Errorf("appConfig model list: %v", sw)
	}

	var chat map[string]any
	b.MustRun(`(async () => {
		const out = {};
		await engine.reload("tiny-qwen3");
		const msgs = [{role: "user", content: "Hello there"}];
		const r1 = await engine.chat.completions.create({messages: msgs, max_tokens: 6, temperature: 0, extra_body: {enable_thinking: false}});
		out.message = (await engine.getMessage()) === r1.choices[0].message.content;
		const r2 = await engine.chat.completions.create({messages: msgs, max_tokens: 6, temperature: 0, extra_body: {enable_thinking: false}});
		out.cached = r2.usage.prompt_tokens_details.cached_tokens;
		// WebLLM's multi-round example: a round that reuses the cache counts only its new part.
		out.prompt_new = [r1.usage.prompt_tokens, r2.usage.prompt_tokens, r2.usage.total_tokens - r2.usage.completion_tokens];
		await engine.resetChat();
		const r3 = await engine.chat.completions.create({messages: msgs, max_tokens: 6, temperature: 0, extra_body: {enable_thinking: false}});
		out.cached_after_reset = r3.usage.prompt_tokens_details.cached_tokens;
		out.same = r1.choices[0].message.content === r3.choices[0].message.content;
		out.stats = await engine.runtimeStatsText();
		// A stream without include_usage has no usage; with it, the last chunk has usage.extra.
		let usages = 0;
		for await (const c of await engine.chat.completions.create({messages: msgs, max_tokens: 4, stream: true})) if (c.usage) usages++;
		out.usages_without = usages;
		let last = null;
		for await (const c of await engine.chat.completions.create({messages: msgs, max_tokens: 4, stream: true, stream_options: {include_usage: true}})) last = c;
		out.last_choices = last.choices.length;
		out.last_extra = last.usage && last.usage.extra;
		// interruptGenerate: the stream ends normally, finish_reason "abort".
		let n = 0, finish = null, text = "";
		for await (const c of await engine.chat.completions.create({messages: msgs, max_tokens: 2000, temperature: 0, ignore_eos: true, stream: true})) {
			const ch = c.choices[0];
			if (ch && ch.delta.content) { text += ch.delta.content; if (++n === 3) engine.interruptGenerate(); }
			if (ch && ch.finish_reason) finish = ch.finish_reason;
		}
		out.interrupt_finish = finish;
		out.interrupt_chunks = n;
		out.interrupt_message = (await engine.getMessage()) === text;
		// n > 1 with usage.extra; a WebLLM LogitProcessor.
		const r4 = await engine.chat.completions.create({messages: msgs, max_tokens: 5, n: 2, temperature: 1, seed: 3});
		out.n = r4.choices.map((c) => c.index);
		out.n_tokens = r4.usage.completion_tokens;
		out.n_extra = !!r4.usage.extra;
		const seen = [];
		let banned = -1;
		const registry = new Map([["tiny-qwen3", {
			processLogits: (logits) => { if (banned < 0) { banned = logits.indexOf(Math.max(...logits)); } logits[banned] = -Infinity; return logits; },
			processSampledToken: (id) => seen.push(id),
			resetState: () => { seen.length = 0; },
		}]]);
		const withProc = new webllm.MLCEngine({logitProcessorRegistry: registry});
		await withProc.reload("tiny-qwen3");
		const r5 = await withProc.completions.create({prompt: [1, 2, 3], max_tokens: 4, temperature: 0, logprobs: 1});
		out.proc_tokens = r5.usage.completion_tokens;
		out.proc_seen = seen.length;
		await withProc.resetChat();
		out.proc_reset = seen.length;
		await withProc.unload();
		out.embedding = await codeOf(engine.embeddings.create({input: "x"}));
		out.vendor = typeof (await engine.getGPUVendor());
		out.max_binding = typeof (await engine.getMaxStorageBufferBindingSize());
		out.prebuilt = webllm.prebuiltAppConfig.model_list.map((m) => m.model_id);
		out.cached_model = await webllm.hasModelInCache("tiny-qwen3");
		await engine.unload();
		out.after_unload = await codeOf(engine.getMessage());
		return out;
	})()`, &chat)
	t.Logf("%v", chat)
	if chat["message"] != true || chat["cached"].(float64) <= 0 || chat["cached_after_reset"] != 0.0 || chat["same"] != true {
		t.Errorf("getMessage / resetChat: %v", chat)
	}
	if pn, _ := chat["prompt_new"].([]any); len(pn) != 3 || pn[1].(float64) != pn[0].(float64)-chat["cached"].(float64) || pn[2] != pn[1] || pn[1].(float64) > pn[0].(float64) {
		t.Errorf("prompt_tokens of a round that reuses the cache, WebLLM's count [first, second, second's total - completion]: %v (cached %v)", chat["prompt_new"], chat["cached"])
	}
	if chat["usages_without"] != 0.0 || chat["last_choices"] != 0.0 || chat["last_extra"] == nil {
		t.Errorf("stream usage: %v", chat)
	}
	if chat["interrupt_finish"] != "abort" || chat["interrupt_chunks"].(float64) > 50 || chat["interrupt_message"] != true {
		t.Errorf("interruptGenerate: %v", chat)
	}
	if n, _ := chat["n"].([]any); len(n) != 2 || n[1] != 1.0 || chat["n_tokens"] != 10.0 || chat["n_extra"] != true {
		t.Errorf("n = 2: %v", chat)
	}
	if chat["proc_tokens"] != 4.0 || chat["proc_seen"] != 3.0 || chat["proc_reset"] != 0.0 {
		t.Errorf("LogitProcessor registry: %v", chat)
	}
	if !strings.HasPrefix(chat["embedding"].(string), "bad_request") || chat["vendor"] != "string" || chat["max_binding"] != "number" ||
		chat["cached_model"] != true || !strings.HasPrefix(chat["after_unload"].(string), "not_loaded") {
		t.Errorf("the rest: %v", chat)
	}
	if p, _ := chat["prebuilt"].([]any); len(p) != 1 || p[0] != "stories260K" {
		t.Errorf("prebuiltAppConfig %v", chat["prebuilt"])
	}
	if !regexp.MustCompile(`^prefill: \d+\.\d{4} tokens/sec, decoding: \d+\.\d{4} tokens/sec$`).MatchString(chat["stats"].(string)) {
		t.Errorf("runtimeStatsText %q", chat["stats"])
	}
}
