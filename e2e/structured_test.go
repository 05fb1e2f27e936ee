package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
)

// Structured output and tool calls through the JS API (web/wasmllm.js) in
// headless Chromium: the worker parses response_format, guided_* and tools
// with api, as the server does.

// toolModels returns a models folder holding tiny-qwen3 with the Qwen3
// chat template (Hermes tool calls), tiny-llama3 with Llama 3.2's and
// tiny-llama31 (the same weights) with Llama-3.1-8B-Instruct's own (both
// Llama 3 JSON tool calls; 3.1's puts the tools in the first user message
// and tool results under the ipython role).
func toolModels(t *testing.T) string {
	t.Helper()
	models := compatModels(t)
	for name, tmpl := range map[string]string{"tiny-llama3": "llama3_2", "tiny-llama31": "llama3_1"} {
		browsertest.Convert(t, browsertest.RepoFile("testdata/hf/tiny-llama3"), filepath.Join(models, name),
			browsertest.ConvertOptions{Tokenizer: browsertest.ChatTokenizerWith(t, "tiny-llama3", browsertest.ChatTemplateOf(t, tmpl))})
	}
	return models
}

// The tools of the tests: arguments the grammar can spell only a few
// ways, so that a forced call from a random model ends.
const e2eTools = `[{type: "function", function: {name: "get_weather", description: "The weather in a city",
	parameters: {type: "object", properties: {city: {enum: ["Paris", "Rome"]}, celsius: {type: "boolean"}}, required: ["city", "celsius"], additionalProperties: false}}},
	{type: "function", function: {name: "get_time", parameters: {type: "object", properties: {zone: {enum: ["UTC", "CET"]}}, required: ["zone"], additionalProperties: false}}}]`

type e2eCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

type e2eToolRound struct {
	Whole struct {
		Choices []struct {
			Message struct {
				Content    *string   `json:"content"`
				HasContent bool      `json:"has_content"`
				ToolCalls  []e2eCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	Pieces        []e2eCall
	StreamFinish  string
	StreamContent string
	Next          struct {
		PromptTokens, CompletionTokens int
		Finish                         string
	}
}

// checkE2EArgs checks a call's arguments against e2eTools.
func checkE2EArgs(t *testing.T, name, args string) {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		t.Errorf("%s(%s): %v", name, args, err)
		return
	}
	switch name {
	case "get_weather":
		_, isBool := a["celsius"].(bool)
		if c, _ := a["city"].(string); (c != "Paris" && c != "Rome") || !isBool || len(a) != 2 {
			t.Errorf("get_weather(%s)", args)
		}
	case "get_time":
		if z, _ := a["zone"].(string); (z != "UTC" && z != "CET") || len(a) != 1 {
			t.Errorf("get_time(%s)", args)
		}
	default:
		t.Errorf("a call of %q", name)
	}
}

// TestClientToolCalls: tools with tool_choice "required" through
// engine.chat.completions.create, on a model of each tool-call syntax
// (Qwen3's Hermes blocks; Llama 3.2's and Llama 3.1's templates, JSON), whole and streamed: one call
// with valid arguments, content null, finish_reason "tool_calls"; the
// stream's delta.tool_calls pieces are OpenAI's (index, id, type, name and
// empty arguments first, then argument fragments) and add up to the same
// call. The call and a role "tool" result then go back as history, which
// renders in the model's template and generates.
func TestClientToolCalls(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: toolModels(t)})
	clientToolCalls(t, browsertest.NewBrowser(t), srv.URL, "cpu")
}

// TestClientToolCallsFirefox is TestClientToolCalls in Firefox on WebGPU
// (the forced call's grammar masks the logits in mask_logits.wgsl as naga
// compiles it).
func TestClientToolCallsFirefox(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: toolModels(t)})
	clientToolCalls(t, browsertest.NewFirefox(t), srv.URL, "webgpu")
}

func clientToolCalls(t *testing.T, b *browsertest.Browser, url, backend string) {
	b.Open(url + "/test.html")
	b.MustRun(pageHelpers, nil)
	for _, model := range []string{"tiny-qwen3", "tiny-llama3", "tiny-llama31"} {
		t.Run(model, func(t *testing.T) {
			loadEngine(t, b, `{model: "/models/`+model+`/", backend: "`+backend+`", contextLength: 2048}`)
			var got e2eToolRound
			b.MustRun(`(async () => {
				const tools = `+e2eTools+`;
				const ask = [{role: "user", content: "Weather in Paris?"}];
				const params = {messages: ask, tools, tool_choice: "required", parallel_tool_calls: false, max_tokens: 400, temperature: 0,
					chat_template_kwargs: {enable_thinking: false}};
				const whole = await engine.chat.completions.create(params);
				whole.choices[0].message.has_content = "content" in whole.choices[0].message;
				const out = {Whole: whole, Pieces: [], StreamFinish: "", StreamContent: ""};
				for await (const chunk of await engine.chat.completions.create({...params, stream: true})) {
					for (const c of chunk.choices) {
						out.Pieces.push(...(c.delta.tool_calls || []));
						out.StreamContent += c.delta.content || "";
						if (c.finish_reason) out.StreamFinish = c.finish_reason;
					}
				}
				const calls = whole.choices[0].message.tool_calls;
				const history = [...ask, {role: "assistant", content: null, tool_calls: calls},
					{role: "tool", tool_call_id: calls[0].id, content: '{"temperature": 21}'}];
				const next = await engine.chat.completions.create({messages: history, tools, max_tokens: 4, temperature: 0,
					chat_template_kwargs: {enable_thinking: false}});
				out.Next = {PromptTokens: next.usage.prompt_tokens, CompletionTokens: next.usage.completion_tokens, Finish: next.choices[0].finish_reason};
				return out;
			})()`, &got)
			if len(got.Whole.Choices) != 1 {
				t.Fatalf("whole: %+v", got.Whole)
			}
			ch := got.Whole.Choices[0]
			if ch.FinishReason != "tool_calls" || !ch.Message.HasContent || ch.Message.Content != nil || len(ch.Message.ToolCalls) != 1 {
				t.Fatalf("whole: finish %q, content %v (present %v), %d calls", ch.FinishReason, ch.Message.Content, ch.Message.HasContent, len(ch.Message.ToolCalls))
			}
			call := ch.Message.ToolCalls[0]
			if call.Type != "function" || !strings.HasPrefix(call.ID, "call_") || call.Index != nil || call.Function.Name == nil || call.Function.Arguments == nil {
				t.Fatalf("call %+v", call)
			}
			name, args := *call.Function.Name, *call.Function.Arguments
			checkE2EArgs(t, name, args)
			t.Logf("%s: %s(%s)", model, name, args)

			if len(got.Pieces) < 2 || got.StreamFinish != "tool_calls" || got.StreamContent != "" {
				t.Fatalf("stream: %d pieces, finish %q, content %q", len(got.Pieces), got.StreamFinish, got.StreamContent)
			}
			first := got.Pieces[0]
			if first.Index == nil || *first.Index != 0 || !strings.HasPrefix(first.ID, "call_") || first.Type != "function" ||
				first.Function.Name == nil || *first.Function.Name != name || first.Function.Arguments == nil || *first.Function.Arguments != "" {
				t.Errorf("first piece %+v", first)
			}
			var sargs strings.Builder
			for _, p := range got.Pieces[1:] {
				if p.Index == nil || *p.Index != 0 || p.ID != "" || p.Type != "" || p.Function.Name != nil || p.Function.Arguments == nil {
					t.Errorf("argument piece %+v", p)
					continue
				}
				sargs.WriteString(*p.Function.Arguments)
			}
			if sargs.String() != args {
				t.Errorf("streamed arguments %q, whole %q", sargs.String(), args)
			}
			if got.Next.CompletionTokens < 1 || got.Next.PromptTokens <= got.Whole.Usage.PromptTokens {
				t.Errorf("the turn after the call: %+v (the call's prompt: %d tokens)", got.Next, got.Whole.Usage.PromptTokens)
			}
		})
	}
}

// TestClientStructuredBackends: a greedy json_schema reply is the same
// text on backend "cpu" and "webgpu" (the mask applied on the GPU) and
// validates; so does any JSON object fitted into 16 tokens
// (fit_max_tokens); guided_choice and a bad schema work as on the server.
func TestClientStructuredBackends(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: compatModels(t)})
	clientStructuredBackends(t, browsertest.NewBrowser(t), srv.URL)
}

// TestClientStructuredBackendsFirefox is TestClientStructuredBackends in
// Firefox: its CPU engine against its WebGPU (wgpu over llvmpipe).
func TestClientStructuredBackendsFirefox(t *testing.T) {
	skipShort(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: compatModels(t)})
	clientStructuredBackends(t, browsertest.NewFirefox(t), srv.URL)
}

func clientStructuredBackends(t *testing.T, b *browsertest.Browser, url string) {
	b.Open(url + "/test.html")
	b.MustRun(pageHelpers, nil)
	type reply struct {
		Backend, Text, Finish, Choice, Bad string
		SIMD                               bool
		Streamed, Fit, FitFinish           string
		FitTokens                          int
	}
	run := func(backend string) reply {
		loadEngine(t, b, `{model: "/models/tiny-qwen3/", backend: "`+backend+`"}`)
		var r reply
		b.MustRun(`(async () => {
			const schema = {type: "object", properties: {city: {enum: ["Paris", "Rome"]}, sunny: {type: "boolean"}}, required: ["city", "sunny"], additionalProperties: false};
			const params = {messages: [{role: "user", content: "Where?"}], max_tokens: 300, temperature: 0, chat_template_kwargs: {enable_thinking: false},
				response_format: {type: "json_schema", json_schema: {name: "place", strict: true, schema}}};
			const whole = await engine.chat.completions.create(params);
			let streamed = "";
			for await (const c of await engine.chat.completions.create({...params, stream: true})) streamed += c.choices[0]?.delta.content || "";
			const choice = await engine.chat.completions.create({messages: [{role: "user", content: "Mood?"}], max_tokens: 10, temperature: 0,
				chat_template_kwargs: {enable_thinking: false}, guided_choice: ["happy", "sad", "very sad"]});
			const bad = await codeOf(engine.chat.completions.create({...params, guided_regex: "a+"}));
			const fit = await engine.chat.completions.create({messages: [{role: "user", content: "JSON?"}], max_tokens: 16, temperature: 0,
				chat_template_kwargs: {enable_thinking: false}, response_format: {type: "json_object"}, fit_max_tokens: true});
			return {Backend: engine.info.backend, SIMD: engine.info.cpu_simd, Text: whole.choices[0].message.content, Finish: whole.choices[0].finish_reason,
				Streamed: streamed, Choice: choice.choices[0].message.content, Bad: bad,
				Fit: fit.choices[0].message.content, FitFinish: fit.choices[0].finish_reason, FitTokens: fit.usage.completion_tokens};
		})()`, &r)
		return r
	}
	cpu := run("cpu")
	gpu := run("webgpu")
	t.Logf("cpu %+v\nwebgpu %+v", cpu, gpu)
	if cpu.Backend != "cpu" || gpu.Backend != "webgpu" {
		t.Fatalf("backends %q, %q", cpu.Backend, gpu.Backend)
	}
	if !cpu.SIMD {
		t.Error("engine.info.cpu_simd is false: the CPU engine runs the plain-Go loops")
	}
	for _, r := range []reply{cpu, gpu} {
		var v map[string]any
		if err := json.Unmarshal([]byte(r.Text), &v); err != nil || (v["city"] != "Paris" && v["city"] != "Rome") || len(v) != 2 {
			t.Errorf("%s: reply %q does not validate (%v)", r.Backend, r.Text, err)
		}
		if r.Finish != "stop" || r.Streamed != r.Text {
			t.Errorf("%s: finish %q, streamed %q, whole %q", r.Backend, r.Finish, r.Streamed, r.Text)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(r.Fit), &obj); err != nil || r.FitFinish != "stop" || r.FitTokens >= 16 {
			t.Errorf("%s: fit_max_tokens reply %q (%v), finish %q, %d tokens", r.Backend, r.Fit, err, r.FitFinish, r.FitTokens)
		}
		if r.Choice != "happy" && r.Choice != "sad" && r.Choice != "very sad" {
			t.Errorf("%s: guided_choice %q", r.Backend, r.Choice)
		}
		if !strings.HasPrefix(r.Bad, "bad_request:") || !strings.Contains(r.Bad, "response_format") || !strings.Contains(r.Bad, "guided_regex") {
			t.Errorf("%s: two constraints: %s", r.Backend, r.Bad)
		}
	}
	if cpu.Text != gpu.Text || cpu.Choice != gpu.Choice || cpu.Fit != gpu.Fit {
		t.Errorf("greedy replies differ:\ncpu    %q %q %q\nwebgpu %q %q %q", cpu.Text, cpu.Choice, cpu.Fit, gpu.Text, gpu.Choice, gpu.Fit)
	}
}
