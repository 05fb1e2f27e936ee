package toolcall

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"wasmllm/tokenizer"
)

// TestLlama31Template renders chats, tool calls and tool results included,
// through Llama-3.1-8B-Instruct's own chat template (fetched at set-up:
// testdata/tokenizer/llama3_1) byte for byte as Hugging Face's Jinja2 does
// (testdata/chat/llama3_1, rendered by jinja2 3.1.6 with transformers'
// apply_chat_template setup). The assistant's call goes in as the OpenAI
// client sends it (arguments a JSON string, content null), through
// TemplateMessagesFor, as the engine does; Detect reads the template as
// Llama 3 JSON calls.
func TestLlama31Template(t *testing.T) {
	src, err := os.ReadFile("../testdata/tokenizer/llama3_1/chat_template.jinja")
	if err != nil {
		t.Fatalf("%v (make testdata fetches it)", err)
	}
	tmpl := string(src)
	if f := Detect(tmpl); f != Llama3JSON {
		t.Fatalf("Detect: %v, want Llama3JSON", f)
	}
	f, err := os.Open("../testdata/chat/llama3_1/llama3_1-chat.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type line struct {
		Case     string                     `json:"case"`
		Messages json.RawMessage            `json:"messages"`
		Tools    json.RawMessage            `json:"tools"`
		Kwargs   map[string]json.RawMessage `json:"kwargs"`
		BOS      string                     `json:"bos_token"`
		Rendered string                     `json:"rendered"`
	}
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c line
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		n++
		msgs := decodeMessages(t, openAIForm(t, c.Messages))
		msgs, err := TemplateMessagesFor(Llama3JSON, msgs)
		if err != nil {
			t.Fatalf("%s: %v", c.Case, err)
		}
		kw := map[string]any{"bos_token": c.BOS, "eos_token": "<|eot_id|>"}
		for k, v := range c.Kwargs {
			kw[k] = v
		}
		opts := tokenizer.ChatOptions{AddGenerationPrompt: true, Kwargs: kw}
		if string(c.Tools) != "null" {
			opts.Tools = c.Tools
		}
		got, err := tokenizer.RenderChat(tmpl, msgs, opts)
		if err != nil {
			t.Errorf("%s: %v", c.Case, err)
			continue
		}
		if got != c.Rendered {
			i := 0
			for i < len(got) && i < len(c.Rendered) && got[i] == c.Rendered[i] {
				i++
			}
			t.Errorf("%s: rendered text differs at byte %d:\ngot  %q\nwant %q", c.Case, i, got[max(0, i-40):min(len(got), i+80)], c.Rendered[max(0, i-40):min(len(c.Rendered), i+80)])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Errorf("%d chats, want 7", n)
	}
}

// openAIForm turns the golden's messages (as Hugging Face's template gets
// them: arguments an object, content "") into what an OpenAI client sends:
// arguments a JSON string, content null.
func openAIForm(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		var calls []map[string]json.RawMessage
		if json.Unmarshal(m["tool_calls"], &calls) != nil || len(calls) == 0 {
			continue
		}
		m["content"] = json.RawMessage("null")
		for _, c := range calls {
			var fn map[string]json.RawMessage
			if err := json.Unmarshal(c["function"], &fn); err != nil {
				t.Fatal(err)
			}
			// The arguments' text, key order kept, as a JSON string.
			s, _ := json.Marshal(string(fn["arguments"]))
			fn["arguments"] = s
			c["function"], _ = json.Marshal(fn)
		}
		m["tool_calls"], _ = json.Marshal(calls)
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
