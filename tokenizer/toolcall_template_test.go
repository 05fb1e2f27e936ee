package tokenizer_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit"
	"wasmllm/tokenizer"
	"wasmllm/toolcall"
)

// These tests render a tool-calling conversation through the real chat
// templates (OpenAI-shaped history prepared with toolcall.TemplateMessages
// as vLLM does), check the text the model family expects byte for byte,
// and check that toolcall.Parse reads the assistant's calls back out of
// the rendered text.

const weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`

const timeTool = `{"type": "function", "function": {"name": "get_time", "description": "The time now", "parameters": {"type": "object", "properties": {}}}}`

// oneCall: a user question, one call, its result.
const oneCall = `[
 {"role": "user", "content": "What's the weather in Paris?"},
 {"role": "assistant", "content": null, "tool_calls": [
  {"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
 {"role": "tool", "tool_call_id": "call_abc", "content": "{\"temperature\": 18, \"sky\": \"clear\"}"}
]`

// twoCalls: parallel calls (nested, non-ASCII and empty arguments).
const twoCalls = `[
 {"role": "user", "content": "Weather in Zürich for 3 days, and the time?"},
 {"role": "assistant", "content": null, "tool_calls": [
  {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Zürich\", \"days\": 3, \"opts\": {\"unit\": \"c\"}}"}},
  {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
 {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
 {"role": "tool", "tool_call_id": "call_2", "content": "12:00"}
]`

type family struct {
	name     string
	template string
	kwargs   map[string]any
}

// chatTemplate reads the chat template of a tokenizer folder under
// testdata/tokenizer (testkit.Need: make testdata fetches it).
func chatTemplate(t *testing.T, dir string) family {
	t.Helper()
	p := filepath.Join("..", "testdata", "tokenizer", dir, "tokenizer_config.json")
	raw, err := os.ReadFile(p)
	testkit.Need(t, err == nil, "%s missing (run make testdata): %v", p, err)
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
		BOS          any    `json:"bos_token"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	kw := map[string]any{}
	if s, ok := cfg.BOS.(string); ok {
		kw["bos_token"] = s
	}
	return family{dir, cfg.ChatTemplate, kw}
}

func deepSeekTemplate(t *testing.T) family {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "testdata", "chat", "deepseek-r1", "templates", "deepseek-r1-distill.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	return family{"deepseek-r1-distill", string(src), map[string]any{"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}}
}

func messages(t *testing.T, s string) []tokenizer.Message {
	t.Helper()
	var msgs []tokenizer.Message
	if err := json.Unmarshal([]byte(s), &msgs); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// render renders history (OpenAI-shaped) for fam after TemplateMessagesFor.
func render(t *testing.T, fam family, history []tokenizer.Message, tools ...string) string {
	t.Helper()
	msgs, err := toolcall.TemplateMessagesFor(toolcall.Detect(fam.template), history)
	if err != nil {
		t.Fatal(err)
	}
	opts := tokenizer.ChatOptions{
		AddGenerationPrompt: true,
		Kwargs:              fam.kwargs,
		Now:                 func() time.Time { return time.Date(2024, 7, 26, 12, 0, 0, 0, time.UTC) },
	}
	if len(tools) > 0 {
		opts.Tools = json.RawMessage("[" + strings.Join(tools, ",") + "]")
	}
	out, err := tokenizer.RenderChat(fam.template, msgs, opts)
	if err != nil {
		t.Fatalf("%s: %v", fam.name, err)
	}
	return out
}

// between returns the text after the first start and before the next end.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("no %q in %q", start, s)
	}
	s = s[i+len(start):]
	j := strings.Index(s, end)
	if j < 0 {
		t.Fatalf("no %q after %q", end, start)
	}
	return s[:j]
}

// wantCalls are the OpenAI tool_calls of history's first assistant message.
func wantCalls(t *testing.T, history []tokenizer.Message) []toolcall.Call {
	t.Helper()
	for _, m := range history {
		for _, f := range m.Extra {
			if m.Role != "assistant" || f.Key != "tool_calls" {
				continue
			}
			var tcs []struct {
				Function struct{ Name, Arguments string }
			}
			if err := json.Unmarshal(f.Value, &tcs); err != nil {
				t.Fatal(err)
			}
			var calls []toolcall.Call
			for _, c := range tcs {
				calls = append(calls, toolcall.Call{Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
			return calls
		}
	}
	t.Fatal("no tool_calls")
	return nil
}

// checkRoundTrip parses the assistant text as rendered and requires the
// calls of the history: same names, arguments equal as JSON and as text
// (the histories spell arguments as the templates' tojson does), and no
// content.
func checkRoundTrip(t *testing.T, f toolcall.Format, assistant string, want []toolcall.Call) []toolcall.Call {
	t.Helper()
	content, calls, err := toolcall.Parse(f, assistant)
	if err != nil {
		t.Fatal(err)
	}
	if content != "" {
		t.Errorf("content %q, want none", content)
	}
	if len(calls) != len(want) {
		t.Fatalf("parsed %d calls %+v from %q, want %d", len(calls), calls, assistant, len(want))
	}
	for i := range calls {
		if calls[i].Name != want[i].Name {
			t.Errorf("call %d: name %q, want %q", i, calls[i].Name, want[i].Name)
		}
		var got, exp any
		if json.Unmarshal([]byte(calls[i].Arguments), &got) != nil || json.Unmarshal([]byte(want[i].Arguments), &exp) != nil || !reflect.DeepEqual(got, exp) {
			t.Errorf("call %d: arguments %s, want %s", i, calls[i].Arguments, want[i].Arguments)
		}
		if calls[i].Arguments != want[i].Arguments {
			t.Errorf("call %d: arguments text %q, want %q", i, calls[i].Arguments, want[i].Arguments)
		}
	}
	return calls
}

// rerender turns parsed calls back into an OpenAI assistant message,
// replaces history's assistant message with it, and requires the same
// rendering: the calls survive reply -> API -> next prompt unchanged.
func rerender(t *testing.T, fam family, history []tokenizer.Message, calls []toolcall.Call, want string, tools ...string) {
	t.Helper()
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var tcs []tc
	for _, c := range calls {
		tcs = append(tcs, tc{c.ID, "function", fn{c.Name, c.Arguments}})
	}
	raw, _ := json.Marshal(tcs)
	out := append([]tokenizer.Message(nil), history...)
	for i, m := range out {
		if m.Role == "assistant" {
			var nm tokenizer.Message
			if err := json.Unmarshal([]byte(`{"role": "assistant", "content": null, "tool_calls": `+string(raw)+`}`), &nm); err != nil {
				t.Fatal(err)
			}
			out[i] = nm
			break
		}
	}
	if got := render(t, fam, out, tools...); got != want {
		t.Errorf("re-rendered from the parsed calls:\n%q\nwant\n%q", got, want)
	}
}

func TestToolCallTemplateDetect(t *testing.T) {
	for dir, want := range map[string]toolcall.Format{
		"qwen3":              toolcall.Hermes,
		"llama3_2":           toolcall.Llama3JSON,
		"llama3":             toolcall.None,
		"llama3_instruct_v2": toolcall.None,
	} {
		if got := toolcall.Detect(chatTemplate(t, dir).template); got != want {
			t.Errorf("%s: %v, want %v", dir, got, want)
		}
	}
	if got := toolcall.Detect(deepSeekTemplate(t).template); got != toolcall.DeepSeekR1 {
		t.Errorf("deepseek-r1-distill: %v", got)
	}
}

const qwenToolsPrompt = "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
	"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n%s\n</tools>\n\n" +
	"For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
	"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"

func TestToolCallTemplateQwen3(t *testing.T) {
	fam := chatTemplate(t, "qwen3")
	history := messages(t, oneCall)
	got := render(t, fam, history, weatherTool)
	want := strings.Replace(qwenToolsPrompt, "%s", weatherTool, 1) +
		"<|im_start|>user\nWhat's the weather in Paris?<|im_end|>\n" +
		"<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\n<tool_response>\n{\"temperature\": 18, \"sky\": \"clear\"}\n</tool_response><|im_end|>\n" +
		"<|im_start|>assistant\n"
	if got != want {
		t.Fatalf("rendered\n%q\nwant\n%q", got, want)
	}
	calls := checkRoundTrip(t, toolcall.Hermes, between(t, got, "<|im_start|>assistant\n", "<|im_end|>"), wantCalls(t, history))
	rerender(t, fam, history, calls, got, weatherTool)

	history = messages(t, twoCalls)
	got = render(t, fam, history, weatherTool, timeTool)
	want = strings.Replace(qwenToolsPrompt, "%s", weatherTool+"\n"+timeTool, 1) +
		"<|im_start|>user\nWeather in Zürich for 3 days, and the time?<|im_end|>\n" +
		"<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"days\": 3, \"opts\": {\"unit\": \"c\"}}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\n12:00\n</tool_response><|im_end|>\n" +
		"<|im_start|>assistant\n"
	if got != want {
		t.Fatalf("rendered\n%q\nwant\n%q", got, want)
	}
	calls = checkRoundTrip(t, toolcall.Hermes, between(t, got, "<|im_start|>assistant\n", "<|im_end|>"), wantCalls(t, history))
	rerender(t, fam, history, calls, got, weatherTool, timeTool)
}

func TestToolCallTemplateLlama32(t *testing.T) {
	fam := chatTemplate(t, "llama3_2")
	history := messages(t, oneCall)
	got := render(t, fam, history, weatherTool)
	var indented bytes.Buffer
	if err := json.Indent(&indented, []byte(weatherTool), "", "    "); err != nil {
		t.Fatal(err)
	}
	want := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" +
		"Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\n" +
		"Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" +
		"Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n" +
		indented.String() + "\n\n" +
		"What's the weather in Paris?<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>" +
		// A string content is iterable to Jinja2, so the template
		// applies tojson to it, as Hugging Face renders it.
		"<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temperature\\\": 18, \\\"sky\\\": \\\"clear\\\"}\"<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\n"
	if got != want {
		t.Fatalf("rendered\n%q\nwant\n%q", got, want)
	}
	assistant := between(t, got, "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>")
	calls := checkRoundTrip(t, toolcall.Llama3JSON, assistant, wantCalls(t, history))
	rerender(t, fam, history, calls, got, weatherTool)
	// The model may also start its call with <|python_tag|>.
	checkRoundTrip(t, toolcall.Llama3JSON, "<|python_tag|>"+assistant, wantCalls(t, history))
}

func TestToolCallTemplateDeepSeekR1(t *testing.T) {
	fam := deepSeekTemplate(t)
	history := messages(t, oneCall)
	// The template renders no tool definitions, and no generation prompt
	// after tool output: the model goes on from <｜tool▁outputs▁end｜>.
	got := render(t, fam, history, weatherTool)
	want := "<｜begin▁of▁sentence｜><｜User｜>What's the weather in Paris?" +
		"<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>" +
		"<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>{\"temperature\": 18, \"sky\": \"clear\"}<｜tool▁output▁end｜><｜tool▁outputs▁end｜>"
	if got != want {
		t.Fatalf("rendered\n%q\nwant\n%q", got, want)
	}
	// With one call the template leaves the section open.
	calls := checkRoundTrip(t, toolcall.DeepSeekR1, between(t, got, "<｜Assistant｜>", "<｜tool▁outputs▁begin｜>"), wantCalls(t, history))
	rerender(t, fam, history, calls, got, weatherTool)

	history = messages(t, twoCalls)
	got = render(t, fam, history, weatherTool, timeTool)
	want = "<｜begin▁of▁sentence｜><｜User｜>Weather in Zürich for 3 days, and the time?" +
		"<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Zürich\", \"days\": 3, \"opts\": {\"unit\": \"c\"}}\n```<｜tool▁call▁end｜>" +
		"\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>" +
		"<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>sunny<｜tool▁output▁end｜>\n<｜tool▁output▁begin｜>12:00<｜tool▁output▁end｜><｜tool▁outputs▁end｜>"
	if got != want {
		t.Fatalf("rendered\n%q\nwant\n%q", got, want)
	}
	calls = checkRoundTrip(t, toolcall.DeepSeekR1, between(t, got, "<｜Assistant｜>", "<｜end▁of▁sentence｜>"), wantCalls(t, history))
	rerender(t, fam, history, calls, got, weatherTool, timeTool)
}
