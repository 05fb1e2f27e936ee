package jinja

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"wasmllm/internal/testkit"
)

// FuzzTemplate compiles a template (the model templates of
// testdata/templates as seeds: a model file brings its own) and renders it
// over a conversation holding the fuzzer's text. Whatever the template, it
// compiles and renders or fails with an error within DefaultLimits: no
// panic, and within a few seconds (the limits end a runaway render in
// about one).
func FuzzTemplate(f *testing.F) {
	paths, _ := filepath.Glob("testdata/templates/*.jinja")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b), "hello")
		}
	}
	f.Add(`{% for m in messages %}{{ m.role }}: {{ m.content | trim }}{% endfor %}`, "x")
	f.Fuzz(func(t *testing.T, src, text string) {
		work := testkit.StartWork()
		tpl, err := Compile(src)
		if err != nil {
			return
		}
		data := map[string]any{
			"messages": []any{
				map[string]any{"role": "system", "content": "You are " + text},
				map[string]any{"role": "user", "content": text},
				map[string]any{"role": "assistant", "content": text, "reasoning_content": text,
					"tool_calls": []any{map[string]any{"type": "function", "function": map[string]any{"name": text, "arguments": map[string]any{"a": text}}}}},
				map[string]any{"role": "tool", "content": text},
			},
			"tools":                 []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object"}}}},
			"add_generation_prompt": true,
			"bos_token":             "<s>",
			"eos_token":             "</s>",
			"enable_thinking":       text != "",
		}
		if _, err := tpl.Render(data); err != nil && err.Error() == "" {
			t.Fatal("an error without a message")
		}
		if d := work(); d > 5*time.Second {
			t.Fatalf("took %v", d)
		}
	})
}
