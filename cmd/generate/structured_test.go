package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
)

const stories = "../../testdata/models/stories260K.gguf"

// TestStructuredFlags: -choice, -regex, -grammar, -json-schema and
// -response-format json constrain the reply as the API's fields do.
func TestStructuredFlags(t *testing.T) {
	dir := t.TempDir()
	gbnf := filepath.Join(dir, "g.gbnf")
	os.WriteFile(gbnf, []byte(`root ::= "The end" "."?`), 0o644)
	schema := filepath.Join(dir, "s.json")
	os.WriteFile(schema, []byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`), 0o644)
	base := []string{"-model", stories, "-prompt", "Once upon a time", "-n", "60"}
	for _, tc := range []struct {
		flags []string
		ok    func(string) bool
	}{
		{[]string{"-choice", "happy,sad,very sad"}, func(s string) bool { return slices.Contains([]string{"happy", "sad", "very sad"}, s) }},
		{[]string{"-regex", "[a-z]{2,5}-[0-9]{2}"}, regexp.MustCompile(`^[a-z]{2,5}-[0-9]{2}$`).MatchString},
		{[]string{"-grammar", gbnf}, func(s string) bool { return s == "The end" || s == "The end." }},
		{[]string{"-json-schema", schema}, func(s string) bool {
			var v map[string]bool
			return json.Unmarshal([]byte(s), &v) == nil && len(v) == 1
		}},
		{[]string{"-response-format", "json", "-n", "12"}, func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "{") }},
	} {
		out := strings.TrimSuffix(runCLI(t, append(slices.Clone(base), tc.flags...)...), "\n")
		if !tc.ok(out) {
			t.Errorf("%v: %q", tc.flags, out)
		}
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"-regex", "a(", "-prompt", "x"}, "-regex: guided_regex"},
		{[]string{"-regex", "a", "-choice", "a,b"}, "-regex and -choice"},
		{[]string{"-response-format", "yaml"}, "-response-format"},
		{[]string{"-tools", schema}, "need -chat"},
		{[]string{"-json-schema", filepath.Join(dir, "missing.json")}, "-json-schema"},
	} {
		if _, err := parseFlags(append([]string{"-model", stories}, tc.flags...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.flags, err, tc.want)
		}
	}
}

// TestToolFlags: -tools with -tool-choice required (one call) or a named
// function, on a model with the Qwen3 template, prints the call as one
// JSON line in OpenAI's message shape (no content: the reply is only the
// call); a tools file with a bad tool names -tools.
func TestToolFlags(t *testing.T) {
	tok := browsertest.ChatTokenizer(t, "tiny-qwen3")
	tools := filepath.Join(t.TempDir(), "tools.json")
	os.WriteFile(tools, []byte(`[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"enum":["Paris","Rome"]}},"required":["city"],"additionalProperties":false}}},
		{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}, "additionalProperties":false}}}]`), 0o644)
	base := []string{"-model", "../../testdata/models/tiny-qwen3-q8_0.gguf", "-tokenizer", tok, "-chat", "Weather?", "-n", "300", "-tools", tools, "-chat-template-kwargs", `{"enable_thinking":false}`}
	for _, choice := range []string{"required", "get_weather"} {
		c, err := parseFlags(append(slices.Clone(base), "-tool-choice", choice, "-parallel-tool-calls=false"))
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if err := run(context.Background(), c, &out, &errb); err != nil {
			t.Fatalf("%s: %v\n%s", choice, err, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var got toolCallsJSON
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil || len(got.ToolCalls) != 1 || got.Content != nil || len(lines) != 1 {
			t.Fatalf("%s: output %q: %v", choice, out.String(), err)
		}
		call := got.ToolCalls[0]
		var args map[string]any
		if call.Type != "function" || !strings.HasPrefix(call.ID, "call_") || json.Unmarshal([]byte(call.Function.Arguments), &args) != nil {
			t.Errorf("%s: call %+v", choice, call)
		}
		if choice != "required" && call.Function.Name != choice {
			t.Errorf("%s: called %s", choice, call.Function.Name)
		}
		t.Logf("%s: %s", choice, lines[len(lines)-1])
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`[{"type":"function","function":{"name":"a b"}}]`), 0o644)
	if _, err := parseFlags(append(slices.Clone(base[:len(base)-4]), "-tools", bad)); err == nil || !strings.HasPrefix(err.Error(), "-tools: ") {
		t.Errorf("bad tools: %v", err)
	}
}

// TestWebGPUStructured: -backend webgpu (the mask applied on the GPU, in
// headless Chromium) gives the CPU's greedy reply under -json-schema (a
// file the browser reads through wasmexec) and -regex.
func TestWebGPUStructured(t *testing.T) {
	needChromium(t)
	dir := browsertest.RepoFile("build/generate-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	schema := filepath.Join(dir, "schema.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","properties":{"hero":{"enum":["Lily","Tom","Sue"]},"happy":{"type":"boolean"}},"required":["hero","happy"],"additionalProperties":false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{{"-json-schema", schema}, {"-regex", "[A-Z][a-z]{2,6} (is|was) [a-z]{3,8}"}} {
		args := append([]string{"-model", stories, "-prompt", "Once upon a time", "-n", "80"}, flags...)
		want := runCLI(t, args...)
		got, stderr, err := runWebGPU(t, args...)
		if err != nil {
			t.Fatalf("%v on webgpu: %v\n%s", flags, err, stderr)
		}
		if got != want {
			t.Errorf("%v: webgpu %q, cpu %q", flags, got, want)
		}
		t.Logf("%v: %q", flags, strings.TrimSpace(got))
	}
}
