package api

import (
	"context"
	"strings"
	"testing"

	"wasmllm/engine"
	"wasmllm/sampler"
	"wasmllm/toolcall"
)

// TestReasoningContent: a reply's thinking goes out as reasoning_content
// (markers dropped), streamed in pieces of any size and whole, and the
// tool-call parser reads only the answer after it.
func TestReasoningContent(t *testing.T) {
	reply := "<think>\nThe user wants the weather.</think>\n\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>"
	rn := &Runner{Model: "m"}
	for _, size := range []int{1, 2, 5, 1000} {
		r, err := ParseChat([]byte(`{"messages":[{"role":"user","content":"x"}],"tools":` + weatherTools + `,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		r.prepared, r.format, r.reasoning = true, toolcall.Hermes, engine.ReasoningOptional
		s := newChatStream(r, rn, "x", 0, 0)
		var out []any
		for i := 0; i < len(reply); i += size {
			out = append(out, s.token(&engine.Token{Text: reply[i:min(i+size, len(reply))]})...)
		}
		out = append(out, s.flush()...)
		res := &engine.Result{Finish: sampler.Finish{Reason: sampler.FinishStop}}
		out = append(out, s.finish(res, false))
		var think strings.Builder
		chunks := make([]map[string]any, len(out))
		for i, c := range out {
			chunks[i] = roundTrip(t, c)
			if ch, ok := chunks[i]["choices"].([]any); ok && len(ch) > 0 {
				if d, ok := ch[0].(map[string]any)["delta"].(map[string]any); ok {
					if rc, ok := d["reasoning_content"].(string); ok {
						think.WriteString(rc)
					}
				}
			}
		}
		content, calls, finish := reassemble(t, chunks)
		if think.String() != "The user wants the weather." || content != "" || len(calls) != 1 || calls[0].name != "get_time" || finish != FinishToolCalls {
			t.Errorf("size %d: reasoning %q content %q calls %+v finish %v", size, think.String(), content, calls, finish)
		}
	}
	r, _ := ParseChat([]byte(`{"messages":[{"role":"user","content":"x"}]}`))
	r.prepared, r.reasoning = true, engine.ReasoningOpened
	w := &chatStream{r: r, rn: rn}
	w.token(&engine.Token{Text: "step one</think>\n\nParis."})
	msg := choice(roundTrip(t, w.finish(&engine.Result{Finish: sampler.Finish{Reason: sampler.FinishStop}}, false)))["message"].(map[string]any)
	if msg["reasoning_content"] != "step one" || msg["content"] != "Paris." {
		t.Errorf("whole: %v", msg)
	}
}

// TestReasoningMode: Prepare finds the thinking block from the rendered
// prompt: Qwen3's template with thinking on lets the reply open one, with
// enable_thinking false the prompt closed it; a template without one has
// none.
func TestReasoningMode(t *testing.T) {
	qwen, _ := loadDir(t, convertedWith(t, toolModels[0].gguf, toolModels[0].hf, toolModels[0].template), 512)
	llama, _ := loadDir(t, convertedWith(t, toolModels[1].gguf, toolModels[1].hf, toolModels[1].template), 512)
	for _, c := range []struct {
		eng  *engine.Engine
		kw   string
		want engine.ReasoningMode
	}{
		{qwen, `{}`, engine.ReasoningOptional},
		{qwen, `{"enable_thinking":false}`, engine.ReasoningNone},
		{llama, `{}`, engine.ReasoningNone},
	} {
		r, err := ParseChat([]byte(`{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":` + c.kw + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := Prepare(context.Background(), c.eng, r); err != nil {
			t.Fatal(err)
		}
		if r.reasoning != c.want {
			t.Errorf("%s: mode %d, want %d", c.kw, r.reasoning, c.want)
		}
	}
}
