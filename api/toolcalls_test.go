package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"wasmllm/engine"
	"wasmllm/sampler"
	"wasmllm/toolcall"
)

// weatherTools are two tools whose arguments the grammar can only spell
// in a few ways, so that a random model's forced call ends.
const weatherTools = `[{"type":"function","function":{"name":"get_weather","description":"The weather in a city",
	"parameters":{"type":"object","properties":{"city":{"enum":["Paris","Rome"]},"celsius":{"type":"boolean"}},"required":["city","celsius"],"additionalProperties":false}}},
	{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"],"additionalProperties":false}}}]`

// toolModels are the tiny models converted with chat templates of each
// tool-call syntax.
var toolModels = []struct{ name, gguf, hf, template string }{
	{"qwen3-hermes", "tiny-qwen3-q8_0.gguf", "tiny-qwen3", "qwen3"},
	{"llama3.2-json", "tiny-llama3-q8_0.gguf", "tiny-llama3", "llama3_2"},
}

// checkArguments checks a call's arguments against weatherTools.
func checkArguments(t *testing.T, name, args string) {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		t.Errorf("%s arguments %q: %v", name, args, err)
		return
	}
	switch name {
	case "get_weather":
		if c, _ := a["city"].(string); (c != "Paris" && c != "Rome") || len(a) != 2 {
			t.Errorf("get_weather arguments %s", args)
		}
		if _, ok := a["celsius"].(bool); !ok {
			t.Errorf("get_weather arguments %s", args)
		}
	case "get_time":
		if z, _ := a["zone"].(string); (z != "UTC" && z != "CET") || len(a) != 1 {
			t.Errorf("get_time arguments %s", args)
		}
	default:
		t.Errorf("call of %q", name)
	}
}

// streamedCall is a tool call put together from a stream's deltas.
type streamedCall struct{ id, typ, name, args string }

// reassemble reads a chat stream's chunks: its content, its tool calls
// (checking each piece's shape: the first with index, id, type, name and
// empty arguments, the rest with index and arguments only) and its
// finish_reason.
func reassemble(t *testing.T, chunks []map[string]any) (content string, calls []streamedCall, finish any) {
	t.Helper()
	for _, c := range chunks {
		cs := c["choices"].([]any)
		if len(cs) == 0 {
			continue
		}
		ch := cs[0].(map[string]any)
		if ch["finish_reason"] != nil {
			finish = ch["finish_reason"]
		}
		d := ch["delta"].(map[string]any)
		if s, ok := d["content"].(string); ok {
			content += s
		}
		tcs, _ := d["tool_calls"].([]any)
		for _, x := range tcs {
			tc := x.(map[string]any)
			i := int(tc["index"].(float64))
			fn := tc["function"].(map[string]any)
			args, ok := fn["arguments"].(string)
			if !ok {
				t.Errorf("piece %v: no arguments string", tc)
			}
			if id, ok := tc["id"].(string); ok {
				if i != len(calls) || tc["type"] != "function" || fn["name"] == nil || args != "" {
					t.Errorf("first piece of call %d: %v", len(calls), tc)
				}
				name, _ := fn["name"].(string)
				calls = append(calls, streamedCall{id: id, typ: tc["type"].(string), name: name})
				continue
			}
			if i != len(calls)-1 || tc["type"] != nil || fn["name"] != nil {
				t.Errorf("argument piece of call %d: %v", i, tc)
				continue
			}
			calls[i].args += args
		}
	}
	return content, calls, finish
}

// TestToolCallsForced: with tool_choice "required" (one call) or a named
// function, on a model of each tool-call syntax, the reply is one call,
// OpenAI-shaped: message.tool_calls with an id, type "function", the name
// and arguments valid for the tool's schema, content null, finish_reason
// "tool_calls"; streamed, the deltas are OpenAI's (vLLM's) pieces and add
// up to the same call. The call then goes back as history with the tool's
// result, renders in the template and generates.
func TestToolCallsForced(t *testing.T) {
	ctx := context.Background()
	for _, m := range toolModels {
		t.Run(m.name, func(t *testing.T) {
			e, _ := loadDir(t, convertedWith(t, m.gguf, m.hf, m.template), 2048)
			rn := runner(e)
			for _, tc := range []struct{ choice, want string }{
				{`"required","parallel_tool_calls":false`, ""},
				{`{"type":"function","function":{"name":"get_time"}}`, "get_time"},
			} {
				body := `{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + weatherTools + `,"tool_choice":` + tc.choice +
					`,"temperature":0,"max_tokens":120,"chat_template_kwargs":{"enable_thinking":false}`
				_, res, err := collect(t, rn, ctx, body+`}`, true)
				if err != nil {
					t.Fatalf("%s: %v", tc.choice, err)
				}
				c := choice(res)
				msg := c["message"].(map[string]any)
				content, hasContent := msg["content"]
				calls, _ := msg["tool_calls"].([]any)
				if c["finish_reason"] != FinishToolCalls || !hasContent || content != nil || len(calls) != 1 {
					t.Fatalf("%s: choice %v", tc.choice, c)
				}
				call := calls[0].(map[string]any)
				fn := call["function"].(map[string]any)
				name, args := fn["name"].(string), fn["arguments"].(string)
				if id, _ := call["id"].(string); !strings.HasPrefix(id, "call_") || call["type"] != "function" || call["index"] != nil {
					t.Errorf("%s: call %v", tc.choice, call)
				}
				if tc.want != "" && name != tc.want {
					t.Errorf("%s: called %s", tc.choice, name)
				}
				checkArguments(t, name, args)
				t.Logf("%s: %s(%s)", tc.choice, name, args)
				u := res["usage"].(map[string]any)

				chunks, _, err := collect(t, rn, ctx, body+`,"stream":true,"stream_options":{"include_usage":true}}`, true)
				if err != nil {
					t.Fatal(err)
				}
				sc, scalls, finish := reassemble(t, chunks)
				if sc != "" || finish != FinishToolCalls || len(scalls) != 1 || scalls[0].name != name || scalls[0].args != args {
					t.Errorf("%s: stream content %q, calls %+v, finish %v; want %s(%s)", tc.choice, sc, scalls, finish, name, args)
				}
				su := chunks[len(chunks)-1]["usage"].(map[string]any)
				if su["completion_tokens"] != u["completion_tokens"] || su["prompt_tokens"] != u["prompt_tokens"] {
					t.Errorf("usage: stream %v, whole %v", su, u)
				}

				// The call and its result as history.
				id := call["id"].(string)
				callJSON, _ := json.Marshal(call)
				next := fmt.Sprintf(`{"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":null,"tool_calls":[%s]},
					{"role":"tool","tool_call_id":%q,"content":"{\"temperature\": 21}"}],"tools":%s,"temperature":0,"max_tokens":6,"chat_template_kwargs":{"enable_thinking":false}}`,
					callJSON, id, weatherTools)
				r, err := ParseChat([]byte(next))
				if err != nil {
					t.Fatal(err)
				}
				if err := Prepare(context.Background(), e, r); err != nil {
					t.Fatal(err)
				}
				ids, err := e.PromptIDs(&r.Engine)
				if err != nil {
					t.Fatalf("rendering the history: %v", err)
				}
				prompt := e.Tok.Decode(ids)
				var argObj map[string]any
				json.Unmarshal([]byte(args), &argObj)
				for _, want := range []string{name, "21"} {
					if !strings.Contains(prompt, want) {
						t.Errorf("the history's prompt lacks %q:\n%s", want, prompt)
					}
				}
				for k := range argObj {
					if !strings.Contains(prompt, k) {
						t.Errorf("the history's prompt lacks the argument %q:\n%s", k, prompt)
					}
				}
				_, res2, err := collect(t, rn, ctx, next, true)
				if err != nil {
					t.Fatalf("the turn after the call: %v", err)
				}
				u2 := res2["usage"].(map[string]any)
				if u2["completion_tokens"].(float64) < 1 || u2["prompt_tokens"].(float64) <= u["prompt_tokens"].(float64) {
					t.Errorf("the turn after the call: usage %v (the call's turn: %v)", u2, u)
				}
			}
		})
	}
}

// TestToolCallsRequiredParallel: tool_choice "required" with parallel
// calls allowed gives at least one call, whether the model stops or runs
// out of tokens; all are well formed but a last one cut by max_tokens,
// which holds the arguments so far (as a stream of it would).
func TestToolCallsRequiredParallel(t *testing.T) {
	e, _ := loadDir(t, convertedWith(t, "tiny-qwen3-q8_0.gguf", "tiny-qwen3", "qwen3"), 1024)
	body := `{"messages":[{"role":"user","content":"Weather?"}],"tools":` + weatherTools + `,"tool_choice":"required","temperature":0,"max_tokens":200,"chat_template_kwargs":{"enable_thinking":false}}`
	_, res, err := collect(t, runner(e), context.Background(), body, true)
	if err != nil {
		t.Fatal(err)
	}
	c := choice(res)
	calls, _ := c["message"].(map[string]any)["tool_calls"].([]any)
	if len(calls) == 0 || (c["finish_reason"] != FinishToolCalls && c["finish_reason"] != "length") {
		t.Fatalf("choice %v", c)
	}
	for i, x := range calls {
		fn := x.(map[string]any)["function"].(map[string]any)
		args := fn["arguments"].(string)
		if i == len(calls)-1 && c["finish_reason"] == "length" && !json.Valid([]byte(args)) {
			if !strings.HasPrefix(args, "{") {
				t.Errorf("cut call %d: arguments %q", i, args)
			}
			continue
		}
		checkArguments(t, fn["name"].(string), args)
	}
}

// TestToolCallShapes: a reply read for calls (tool_choice auto), split
// into tokens anywhere, streams content deltas for the text outside the
// calls and OpenAI's tool_calls pieces, adding up to what the whole
// response holds; finish_reason "stop" becomes "tool_calls" and other
// reasons pass through.
func TestToolCallShapes(t *testing.T) {
	reply := "Let me check. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"celsius\": true}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>"
	wantContent, wantCalls, err := toolcall.Parse(toolcall.Hermes, reply)
	if err != nil || len(wantCalls) != 2 {
		t.Fatalf("toolcall.Parse: %v, %v", wantCalls, err)
	}
	rn := &Runner{Model: "m"}
	for _, fin := range []sampler.FinishReason{sampler.FinishStop, sampler.FinishLength, sampler.FinishGrammar} {
		for _, size := range []int{1, 3, 7, 1000} {
			r, err := ParseChat([]byte(`{"messages":[{"role":"user","content":"x"}],"tools":` + weatherTools + `,"stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			r.prepared, r.format = true, toolcall.Hermes
			s := &chatStream{r: r, rn: rn, id: "x", parser: toolcall.NewStreamParser(toolcall.Hermes)}
			var out []any
			for i := 0; i < len(reply); i += size {
				out = append(out, s.token(&engine.Token{Text: reply[i:min(i+size, len(reply))]})...)
			}
			out = append(out, s.flush()...)
			res := &engine.Result{Finish: sampler.Finish{Reason: fin}}
			out = append(out, s.finish(res, false))
			chunks := make([]map[string]any, len(out))
			for i, c := range out {
				chunks[i] = roundTrip(t, c)
			}
			content, calls, finish := reassemble(t, chunks)
			want := string(fin)
			if fin == sampler.FinishStop {
				want = FinishToolCalls
			}
			if content != wantContent || len(calls) != 2 || finish != want {
				t.Errorf("size %d, %s: content %q, calls %+v, finish %v", size, fin, content, calls, finish)
				continue
			}
			for i, c := range calls {
				if c.name != wantCalls[i].Name || c.args != wantCalls[i].Arguments || !strings.HasPrefix(c.id, "call_") {
					t.Errorf("size %d: call %d %+v, want %+v", size, i, c, wantCalls[i])
				}
			}

			// The whole response.
			r.Stream = false
			w := &chatStream{r: r, rn: rn, id: "x"}
			w.token(&engine.Token{Text: reply})
			whole := roundTrip(t, w.finish(res, false))
			c := choice(whole)
			msg := c["message"].(map[string]any)
			wc, _ := msg["tool_calls"].([]any)
			if msg["content"] != wantContent || len(wc) != 2 || c["finish_reason"] != want {
				t.Errorf("%s: whole %v", fin, c)
			}
		}
	}
	// A reply without calls is all content, and stop stays stop.
	r, _ := ParseChat([]byte(`{"messages":[{"role":"user","content":"x"}],"tools":` + weatherTools + `}`))
	r.prepared, r.format = true, toolcall.Hermes
	w := &chatStream{r: r, rn: rn}
	w.token(&engine.Token{Text: "no calls here "})
	c := choice(roundTrip(t, w.finish(&engine.Result{Finish: sampler.Finish{Reason: sampler.FinishStop}}, false)))
	if msg := c["message"].(map[string]any); msg["content"] != "no calls here " || msg["tool_calls"] != nil || c["finish_reason"] != "stop" {
		t.Errorf("no calls: %v", c)
	}
}

// TestToolChoiceWithoutSyntax: a model whose template teaches no tool-call
// syntax cannot be forced to call (bad_request naming tool_choice); with
// tool_choice auto its reply is content.
func TestToolChoiceWithoutSyntax(t *testing.T) {
	plain := `{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n`
	e, _ := loadDir(t, convertedWith(t, "tiny-qwen3-q8_0.gguf", "tiny-qwen3", plain), 256)
	rn := runner(e)
	body := `{"messages":[{"role":"user","content":"Hi"}],"tools":` + weatherTools + `,"max_tokens":4,"temperature":0,"tool_choice":`
	_, _, err := collect(t, rn, context.Background(), body+`"required"}`, true)
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != CodeBadRequest || ae.Details["param"] != "tool_choice" {
		t.Errorf("required without a syntax: %v", err)
	}
	chunks, _, err := collect(t, rn, context.Background(), body+`"required","stream":true}`, true)
	if !errors.As(err, &ae) || ae.Code != CodeBadRequest || len(chunks) != 0 {
		t.Errorf("streamed required without a syntax: %v after %d chunks", err, len(chunks))
	}
	_, res, err := collect(t, rn, context.Background(), body+`"auto"}`, true)
	if err != nil {
		t.Fatal(err)
	}
	c := choice(res)
	if msg := c["message"].(map[string]any); msg["tool_calls"] != nil || c["finish_reason"] != "length" {
		t.Errorf("auto without a syntax: %v", c)
	}
}

// TestConstrainedReplies: json_schema, guided_choice and guided_regex
// replies keep to their constraint, streamed and not, with usage; a
// constraint the other processors leave no token for ends with
// finish_reason "grammar_dead_end".
func TestConstrainedReplies(t *testing.T) {
	ctx := context.Background()
	chat, _ := loadDir(t, converted(t, "tiny-qwen3-q8_0.gguf"), 512)
	story, _ := loadDir(t, converted(t, "stories260K.gguf"), 0)
	for _, tc := range []struct {
		eng    *engine.Engine
		isChat bool
		body   string
		check  func(string) bool
	}{
		{chat, true, `{"messages":[{"role":"user","content":"Where?"}],"chat_template_kwargs":{"enable_thinking":false},"max_tokens":300,"temperature":0,
			"response_format":{"type":"json_schema","json_schema":{"name":"place","strict":true,"schema":` + testSchema + `}}`, func(s string) bool {
			var v struct{ City string }
			return json.Unmarshal([]byte(s), &v) == nil && (v.City == "Paris" || v.City == "Rome")
		}},
		{story, false, `{"prompt":"Once upon a time","max_tokens":20,"temperature":0,"guided_choice":["happy","sad","very sad"]`, func(s string) bool {
			return slices.Contains([]string{"happy", "sad", "very sad"}, s)
		}},
		{story, false, `{"prompt":"Lily is","max_tokens":20,"temperature":0.8,"seed":3,"guided_regex":"[a-z]{3,6} [0-9]{2}"`, regexp.MustCompile(`^[a-z]{3,6} [0-9]{2}$`).MatchString},
	} {
		rn := runner(tc.eng)
		_, res, err := collect(t, rn, ctx, tc.body+`}`, tc.isChat)
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		c := choice(res)
		text, _ := c["text"].(string)
		if tc.isChat {
			text, _ = c["message"].(map[string]any)["content"].(string)
		}
		if !tc.check(text) || c["finish_reason"] != "stop" {
			t.Errorf("%s: %q, finish %v", tc.body, text, c["finish_reason"])
		}
		u := res["usage"].(map[string]any)
		if u["completion_tokens"].(float64) < 1 || u["total_tokens"] != u["prompt_tokens"].(float64)+u["completion_tokens"].(float64) {
			t.Errorf("usage %v", u)
		}
		chunks, _, err := collect(t, rn, ctx, tc.body+`,"stream":true}`, tc.isChat)
		if err != nil {
			t.Fatal(err)
		}
		var streamed strings.Builder
		for _, ch := range chunks {
			cc := choice(ch)
			if tc.isChat {
				s, _ := cc["delta"].(map[string]any)["content"].(string)
				streamed.WriteString(s)
			} else {
				streamed.WriteString(cc["text"].(string))
			}
		}
		if streamed.String() != text || choice(chunks[len(chunks)-1])["finish_reason"] != "stop" {
			t.Errorf("%s: streamed %q, whole %q", tc.body, streamed.String(), text)
		}
		t.Logf("%q", text)
	}
	// Every token the grammar allows banned by allowed_token_ids.
	for _, stream := range []string{"false", "true"} {
		chunks, res, err := collect(t, runner(story), ctx, `{"prompt":"Once","max_tokens":8,"temperature":0,"guided_grammar":"root ::= \"b\"+","allowed_token_ids":[5],"stream":`+stream+`}`, false)
		if err != nil {
			t.Fatal(err)
		}
		if res == nil {
			res = chunks[len(chunks)-1]
		}
		if fr := choice(res)["finish_reason"]; fr != string(sampler.FinishGrammar) {
			t.Errorf("stream %s: finish_reason %v, want grammar_dead_end", stream, fr)
		}
	}
}
