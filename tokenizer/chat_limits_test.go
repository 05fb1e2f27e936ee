package tokenizer

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"wasmllm/internal/testkit"
	"wasmllm/loader"
)

// hostileTemplates are chat templates that, without the engine's limits,
// ran out of memory, overflowed the stack or never finished; each with the
// limit that stops it.
var hostileTemplates = []struct {
	name, tmpl, limit string
}{
	{"huge range", `{% for i in range(10**9) %}x{% endfor %}`, "max_range"},
	{"macro recursion", `{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}`, "max_depth"},
	{"string doubling", `{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}`, "max_value_bytes"},
	{"indent width", `{{ 'x'|indent(1000000000) }}`, "max_value_bytes"},
	{"indent float width", `{{ 'x'|indent(1e9) }}`, "max_value_bytes"},
	{"replace growth", `{{ ('a'*1000)|replace('a', 'b'*1000000) }}`, "max_value_bytes"},
	{"repeated replace", `{% set ns = namespace(s='aa') %}{% for i in range(100) %}{% set ns.s = ns.s|replace('a', 'aa') %}{% endfor %}{{ ns.s }}`, "max_value_bytes"},
	{"repeated replace method", `{% set ns = namespace(s='aa') %}{% for i in range(100) %}{% set ns.s = ns.s.replace('a', 'aa') %}{% endfor %}{{ ns.s }}`, "max_value_bytes"},
	{"range join", `{{ range(10**8)|join(',') }}`, "max_range"},
	{"nested loops", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, "max_steps"},
	{"nested list literal", "{{ " + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + " }}", "max_depth"},
	{"nested blocks", strings.Repeat("{% if true %}", 100000) + strings.Repeat("{% endif %}", 100000), "max_depth"},
	{"kept strings", `{% set l = [] %}{% for i in range(1000) %}{% set _ = l.append('x' * 10000000 ~ i) %}{% endfor %}`, "max_alloc_bytes"},
	{"output", `{% for i in range(100000) %}{{ 'x' * 1000000 }}{% endfor %}`, "max_output_bytes"},
	{"shared lists", `{% set ns = namespace(a=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a }}`, "max_value_bytes"},
	{"shared lists compared", `{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}{{ ns.a == ns.b }}`, "max_steps"},
	{"strftime format", `{{ strftime_now('%B' * 1000000) }}`, ""},
}

// peakHeap runs f and returns the largest HeapInuse growth seen while it
// ran, sampled every few milliseconds, and the bytes it allocated.
func peakHeap(f func()) (peak, total uint64) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > before.HeapInuse {
				peak = max(peak, m.HeapInuse-before.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	return peak, after.TotalAlloc - before.TotalAlloc
}

// TestHostileTemplates checks that each hostile template fails fast, in
// little memory, with a *TemplateError naming the limit it hit.
func TestHostileTemplates(t *testing.T) {
	for _, c := range hostileTemplates {
		t.Run(c.name, func(t *testing.T) {
			var err error
			work := testkit.StartWork()
			peak, total := peakHeap(func() {
				_, err = RenderChat(c.tmpl, []Message{{Role: "user", Content: "hi"}}, ChatOptions{})
			})
			elapsed := work()
			t.Logf("%v, heap +%d MiB at most, %d MiB allocated: %v", elapsed.Round(time.Millisecond), peak>>20, total>>20, err)
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("got %v, want a *TemplateError", err)
			}
			if te.Limit != c.limit {
				t.Errorf("Limit %q, want %q (%v)", te.Limit, c.limit, err)
			}
			if c.limit != "" && !strings.Contains(err.Error(), c.limit) {
				t.Errorf("message %q does not name %s", err, c.limit)
			}
			if elapsed > 3*time.Second {
				t.Errorf("took %v", elapsed)
			}
			if peak > 256<<20 {
				t.Errorf("heap grew by %d MiB", peak>>20)
			}
			if total > 2<<30 {
				t.Errorf("allocated %d MiB", total>>20)
			}
		})
	}
}

// TestTemplateErrorNamesSource checks that a limit hit in a model's
// template names where the template came from and the limit.
func TestTemplateErrorNamesSource(t *testing.T) {
	const tmpl = `{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}`
	msgs := []Message{{Role: "user", Content: "hi"}}

	cfg, err := json.Marshal(map[string]any{"chat_template": tmpl})
	if err != nil {
		t.Fatal(err)
	}
	hf, err := FromHFJSON(hfJSON(`"a b"`, `{"type":"ByteLevel"}`), cfg)
	if err != nil {
		t.Fatal(err)
	}
	gguf, err := FromGGUF(&loader.GGUF{File: "m.gguf", Meta: map[string]any{
		"tokenizer.ggml.model":    "llama",
		"tokenizer.ggml.tokens":   []string{"<unk>", "<s>", "</s>", "a"},
		"tokenizer.chat_template": tmpl,
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tk   *Tokenizer
		want string
	}{
		{hf, "tokenizer_config.json chat_template"},
		{gguf, "tokenizer.chat_template (GGUF)"},
	} {
		_, err := c.tk.RenderChat(msgs, ChatOptions{})
		var te *TemplateError
		if !errors.As(err, &te) {
			t.Errorf("%s: got %v, want a *TemplateError", c.want, err)
			continue
		}
		if te.Template != c.want || te.Limit != "max_depth" || te.Stage != "render" {
			t.Errorf("got Template %q Limit %q Stage %q, want %q max_depth render", te.Template, te.Limit, te.Stage, c.want)
		}
		if want := "chat template (" + c.want + ") render: template exceeded its max_depth limit (200)"; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
	}

	// A template nested too deep fails to compile, naming the limit too.
	_, err = RenderChat("{{ "+strings.Repeat("(", 1000)+"1"+strings.Repeat(")", 1000)+" }}", nil, ChatOptions{})
	var te *TemplateError
	if !errors.As(err, &te) || te.Stage != "compile" || te.Limit != "max_depth" {
		t.Errorf("deep expression: %v", err)
	}
	// Other failures name no limit.
	_, err = RenderChat("{{ raise_exception('no') }}", nil, ChatOptions{})
	if !errors.As(err, &te) || te.Limit != "" {
		t.Errorf("raise_exception: %v", err)
	}
}
