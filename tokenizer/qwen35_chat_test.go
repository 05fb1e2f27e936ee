package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQwen35Chat renders Qwen3.5's chat template (Qwen3.5-35B-A3B's, in
// the Jinja fork's fixtures) on the conversations of
// testdata/qwen35/chat/qwen35.chat.jsonl and compares with Python Jinja2's
// renders in Hugging Face's environment (render.py there): thinking on by
// default and with enable_thinking true (the prompt opens "<think>\n"),
// closed with enable_thinking false, reasoning_content kept after the
// last user query and dropped before it, a think block in the content
// split off, tools, tool calls and their results, and the template's own
// errors.
func TestQwen35Chat(t *testing.T) {
	tmpl, err := os.ReadFile("internal/jinja/testdata/templates/Qwen3.5-35B-A3B-Q8_0.jinja")
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		chatLine
		Tools json.RawMessage `json:"tools"`
	}
	lines := readJSONL[line](t, filepath.Join(testdata, "qwen35", "chat", "qwen35.chat.jsonl"))
	if len(lines) < 14 {
		t.Fatalf("%d cases", len(lines))
	}
	opened, closed := 0, 0
	for n, c := range lines {
		got, err := RenderChat(string(tmpl), c.Messages, ChatOptions{Tools: c.Tools, Kwargs: kwargs(c.Kwargs)})
		if c.Error != "" {
			var te *TemplateError
			if !errors.As(err, &te) || !strings.Contains(err.Error(), c.Error) {
				t.Errorf("line %d (%s): rendered %q, error %v; want the template's error %q", n+1, c.Case, got, err, c.Error)
			}
			continue
		}
		if err != nil {
			t.Errorf("line %d (%s): %v", n+1, c.Case, err)
			continue
		}
		if got != c.Rendered {
			t.Errorf("line %d (%s): rendered text differs: %s", n+1, c.Case, firstDiff(got, c.Rendered))
		}
		switch {
		case strings.HasSuffix(got, "<|im_start|>assistant\n<think>\n"):
			opened++
		case strings.HasSuffix(got, "<|im_start|>assistant\n<think>\n\n</think>\n\n"):
			closed++
		}
	}
	// The reply starts inside the thinking block unless enable_thinking
	// is false (engine.ReasoningOpened, ReasoningNone).
	if opened < 3 || closed < 3 {
		t.Errorf("%d prompts open a thinking block, %d close it", opened, closed)
	}
}
