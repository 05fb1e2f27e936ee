package jinja_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit"
	"wasmllm/tokenizer/internal/jinja"
)

// renderLimits compiles and renders src within lim.
func renderLimits(src string, lim jinja.Limits, data map[string]any) (string, error) {
	tmpl, err := jinja.CompileLimits(src, lim)
	if err != nil {
		return "", err
	}
	return tmpl.RenderLimits(data, lim)
}

// wantLimit checks that err is a *LimitError for limit.
func wantLimit(t *testing.T, src string, err error, limit string) {
	t.Helper()
	var le *jinja.LimitError
	if !errors.As(err, &le) {
		t.Errorf("%.80q: got %v, want a %s *LimitError", src, err, limit)
		return
	}
	if le.Limit != limit {
		t.Errorf("%.80q: hit %s, want %s (%v)", src, le.Limit, limit, err)
	}
}

// testData is the data of the limit tests: values larger than the limits
// the tests set, which a template may read but not copy.
func testData() map[string]any {
	list := make([]any, 500)
	for i := range list {
		list[i] = i
	}
	return map[string]any{"big": strings.Repeat("ab\n", 400), "biglist": list}
}

type limitCase struct {
	name string
	src  string
	// ok is a variant of src that stays within the limit, if any.
	ok string
}

func checkCases(t *testing.T, lim jinja.Limits, limit string, cases []limitCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work := testkit.StartWork()
			_, err := renderLimits(c.src, lim, testData())
			wantLimit(t, c.src, err, limit)
			if d := work(); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			if c.ok != "" {
				if _, err := renderLimits(c.ok, lim, testData()); err != nil {
					t.Errorf("%q: %v", c.ok, err)
				}
			}
		})
	}
}

func TestLimitOutputBytes(t *testing.T) {
	lim := jinja.Limits{MaxOutputBytes: 1000}
	checkCases(t, lim, jinja.LimitOutputBytes, []limitCase{
		{"text", `{% for i in range(101) %}0123456789{% endfor %}`, `{% for i in range(100) %}0123456789{% endfor %}`},
		{"expression", `{% for i in range(11) %}{{ 'x' * 100 }}{% endfor %}`, `{% for i in range(10) %}{{ 'x' * 100 }}{% endfor %}`},
		{"call block", `{% macro m() %}{{ caller() }}{% endmacro %}{% call m() %}{{ 'x' * 1001 }}{% endcall %}`, ""},
	})
}

func TestLimitValueBytes(t *testing.T) {
	lim := jinja.Limits{MaxValueBytes: 1000}
	checkCases(t, lim, jinja.LimitValueBytes, []limitCase{
		{"concat", `{% set s = 'x' * 600 %}{% set t = s ~ s %}`, `{% set s = 'x' * 500 %}{% set t = s ~ s %}`},
		{"plus string", `{% set s = 'x' * 600 %}{% set t = s + s %}`, `{% set s = 'x' * 500 %}{% set t = s + s %}`},
		{"plus list", `{% set l = range(30)|list %}{% set m = l + l %}`, `{% set l = range(20)|list %}{% set m = l + l %}`},
		{"repeat string", `{% set s = 'ab' * 501 %}`, `{% set s = 'ab' * 500 %}`},
		{"repeat list", `{% set l = [1, 2] * 30 %}`, `{% set l = [1, 2] * 20 %}`},
		{"doubling", `{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`, ""},
		{"indent", `{{ 'x'|indent(1001) }}`, `{{ 'a\nb'|indent(400) }}`},
		{"indent float", `{{ 'x'|indent(1e9) }}`, ""},
		{"indent lines", `{{ big|indent(4) }}`, ""},
		{"replace filter", `{{ ('a' * 10)|replace('a', 'b' * 101) }}`, `{{ ('a' * 10)|replace('a', 'b' * 99) }}`},
		{"replace method", `{{ ('a' * 10).replace('a', 'b' * 101) }}`, `{{ ('a' * 10).replace('a', 'b' * 99) }}`},
		{"replace empty old", `{{ ('a' * 100)|replace('', 'bbbbbbbbbb') }}`, ""},
		{"join", `{{ range(100)|join('-' * 10) }}`, `{{ range(30)|join('-') }}`},
		{"format method", `{{ ('{0}' * 10).format('y' * 101) }}`, `{{ ('{0}' * 10).format('y' * 90) }}`},
		{"percent format", `{{ '%1001d' % 1 }}`, `{{ '%900d' % 1 }}`},
		{"percent star", `{{ '%*d' % (1001, 1) }}`, ""},
		{"upper", `{{ big.upper() }}`, ""},
		{"title filter", `{{ big|title }}`, ""},
		{"escape", `{{ ('<' * 300)|escape }}`, `{{ ('<' * 200)|escape }}`},
		{"tojson indent", `{{ [1]|tojson(indent=1001) }}`, `{{ [1]|tojson(indent=100) }}`},
		{"tojson", `{{ (range(100)|list)|tojson }}`, ""},
		{"list of string", `{{ ('x' * 50)|list }}`, `{{ ('x' * 30)|list }}`},
		{"split", `{{ ('a,' * 50).split(',') }}`, `{{ ('a,' * 10).split(',') }}`},
		{"split whitespace", `{{ ('a ' * 50).split() }}`, ""},
		{"for over string", `{% for c in 'x' * 50 %}{% endfor %}`, `{% for c in 'x' * 40 %}{% endfor %}`},
		{"batch fill", `{{ [1]|batch(1000, 0) }}`, ""},
		{"reverse", `{{ biglist|reverse }}`, ""},
		{"sort", `{{ biglist|sort }}`, ""},
		{"slice", `{{ biglist[1:] }}`, `{{ biglist[:10] }}`},
		{"append", `{% set l = [] %}{% for i in range(50) %}{% set _ = l.append(i) %}{% endfor %}`, `{% set l = [] %}{% for i in range(40) %}{% set _ = l.append(i) %}{% endfor %}`},
		{"dict update", `{% set d = {} %}{% for i in range(30) %}{% set _ = d.update({i: i}) %}{% endfor %}`, `{% set d = {} %}{% for i in range(20) %}{% set _ = d.update({i: i}) %}{% endfor %}`},
		{"namespace", `{% set ns = namespace() %}{% for i in range(30) %}{% set ns.x = 1 %}{% endfor %}{{ dict(big=big, **{'a': 1}) }}`, ""},
		{"print list", `{{ biglist }}`, `{{ biglist[:30] }}`},
		{"macro output", `{% macro m() %}{% for i in range(11) %}{{ 'x' * 100 }}{% endfor %}{% endmacro %}{% set s = m() %}`, ""},
		{"set block", `{% set s %}{% for i in range(11) %}{{ 'x' * 100 }}{% endfor %}{% endset %}`, ""},
		{"filter block", `{% filter upper %}{% for i in range(11) %}{{ 'x' * 100 }}{% endfor %}{% endfilter %}`, ""},
		{"fromjson", `{{ ('[' ~ '0,' * 60 ~ '0]')|fromjson }}`, ""},
		{"items", `{% set d = {} %}{% for i in range(15) %}{% set _ = d.update({i: i}) %}{% endfor %}{{ d|items }}`, ""},
	})
}

func TestLimitAllocBytes(t *testing.T) {
	lim := jinja.Limits{MaxValueBytes: 1000, MaxAllocBytes: 10000}
	checkCases(t, lim, jinja.LimitAllocBytes, []limitCase{
		{"kept values", `{% set l = [] %}{% for i in range(20) %}{% set _ = l.append('x' * 900) %}{% endfor %}`,
			`{% set l = [] %}{% for i in range(5) %}{% set _ = l.append('x' * 900) %}{% endfor %}`},
		{"output", `{% for i in range(12) %}{{ 'x' * 900 }}{% endfor %}`, ""},
	})
}

func TestLimitSteps(t *testing.T) {
	lim := jinja.Limits{MaxSteps: 100_000}
	checkCases(t, lim, jinja.LimitSteps, []limitCase{
		{"nested loops", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`,
			`{% for i in range(10) %}{% for j in range(100) %}{% endfor %}{% endfor %}`},
		{"unique", `{{ range(10000)|unique|length }}`, `{{ range(100)|unique|length }}`},
		{"equal shared lists", `{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(40) %}{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}{{ ns.a == ns.b }}`, ""},
		{"print shared lists", `{% set ns = namespace(a=[1]) %}{% for i in range(40) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a }}`, ""},
		{"tojson shared lists", `{% set ns = namespace(a=[1]) %}{% for i in range(40) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a|tojson }}`, ""},
		{"string scans", `{% set s = 'x' * 100000 %}{% for i in range(1000) %}{{ 'y' in s }}{% endfor %}`, ""},
		{"macro calls", `{% macro m() %}{{ 1 }}{% endmacro %}{% for i in range(100000) %}{{ m() }}{% endfor %}`, ""},
	})
}

func TestLimitRange(t *testing.T) {
	lim := jinja.Limits{MaxRange: 1000}
	checkCases(t, lim, jinja.LimitRange, []limitCase{
		{"stop", `{% for i in range(10**9) %}x{% endfor %}`, `{{ range(1000)|length }}`},
		{"start stop", `{{ range(-9223372036854775807, 9223372036854775807) }}`, `{{ range(5, 1005)|length }}`},
		{"step", `{{ range(0, 10000, 9) }}`, `{{ range(0, 10000, 10)|length }}`},
		{"negative step", `{{ range(10000, 0, -9) }}`, `{{ range(10000, 0, -10)|length }}`},
		{"join", `{{ range(10**8)|join(',') }}`, ""},
	})
}

func TestLimitDepth(t *testing.T) {
	lim := jinja.Limits{MaxDepth: 50}
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	checkCases(t, lim, jinja.LimitDepth, []limitCase{
		{"macro recursion", `{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}`,
			`{% macro f(n) %}{% if n < 40 %}{{ f(n+1) }}{% endif %}{% endmacro %}{{ f(0) }}`},
		{"macro as filter", `{% macro f(x) %}{{ x|f }}{% endmacro %}{{ 1|f }}`, ""},
		{"default argument", `{% macro f(a=f()) %}{% endmacro %}{{ f() }}`, ""},
		{"caller recursion", `{% macro f() %}{% call f() %}{% endcall %}{% endmacro %}{{ f() }}`, ""},
		{"recursive loop", `{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`, `{% for x in [[[1]]] recursive %}{% if x is iterable %}{{ loop(x) }}{% endif %}{% endfor %}`},
		{"brackets", "{{ " + deep("[", "]", 200000) + " }}", "{{ " + deep("[", "]", 40) + " }}"},
		{"parentheses", "{{ " + deep("(", ")", 200000) + " }}", "{{ " + deep("(", ")", 40) + " }}"},
		{"braces", "{{ " + strings.Repeat("{'a': ", 200000) + "1" + strings.Repeat("}", 200000) + " }}", ""},
		{"calls", "{{ " + strings.Repeat("dict(a=", 100) + "1" + strings.Repeat(")", 100) + " }}", ""},
		{"not", "{{ " + strings.Repeat("not ", 200000) + "1 }}", "{{ " + strings.Repeat("not ", 40) + "1 }}"},
		{"minus", "{{ " + strings.Repeat("-", 200000) + "1 }}", "{{ " + strings.Repeat("- ", 40) + "1 }}"},
		{"chain", "{{ 1" + strings.Repeat(" ~ 1", 60) + " }}", "{{ 1" + strings.Repeat(" ~ 1", 40) + " }}"},
		{"filters", "{{ 'a'" + strings.Repeat("|trim", 60) + " }}", "{{ 'a'" + strings.Repeat("|trim", 40) + " }}"},
		{"attributes", "{{ x" + strings.Repeat(".a", 60) + " }}", ""},
		{"blocks", strings.Repeat("{% if true %}", 60) + strings.Repeat("{% endif %}", 60), strings.Repeat("{% if true %}", 40) + strings.Repeat("{% endif %}", 40)},
		{"print nested list", `{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}`, ""},
		{"tojson nested list", `{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l|tojson }}`, ""},
		{"compare nested lists", `{% set ns = namespace(a=[], b=[]) %}{% for i in range(100) %}{% set ns.a = [ns.a] %}{% set ns.b = [ns.b] %}{% endfor %}{{ ns.a == ns.b }}`, ""},
		{"fromjson", `{{ ('[' * 100 ~ ']' * 100)|fromjson }}`, `{{ ('[' * 40 ~ ']' * 40)|fromjson }}`},
	})
}

func TestLimitTimeout(t *testing.T) {
	lim := jinja.Limits{Timeout: time.Nanosecond}
	_, err := renderLimits(`{% for i in range(10000) %}{% endfor %}`, lim, nil)
	wantLimit(t, "timeout", err, jinja.LimitTimeout)
}

// TestSharedBudget checks that the evaluators of macro calls, loops, call
// and filter blocks draw on one budget: each call alone is within the
// limits, all of them together are not.
func TestSharedBudget(t *testing.T) {
	steps := jinja.Limits{MaxSteps: 100_000}
	alloc := jinja.Limits{MaxValueBytes: 1000, MaxAllocBytes: 10_000}
	for _, c := range []struct {
		src   string
		lim   jinja.Limits
		limit string
	}{
		{`{% macro m() %}{% for i in range(500) %}{% endfor %}{% endmacro %}{% for i in range(100) %}{{ m() }}{% endfor %}`, steps, jinja.LimitSteps},
		{`{% macro m() %}{{ caller() }}{% endmacro %}{% for i in range(100) %}{% call m() %}{% for i in range(500) %}{% endfor %}{% endcall %}{% endfor %}`, steps, jinja.LimitSteps},
		{`{% for i in range(100) %}{% filter upper %}{% for i in range(500) %}{% endfor %}{% endfilter %}{% endfor %}`, steps, jinja.LimitSteps},
		{`{% for x in range(100) recursive %}{% if loop.depth < 2 %}{{ loop(range(300)) }}{% endif %}{% endfor %}`, steps, jinja.LimitSteps},
		{`{% macro m() %}{{ 'x' * 900 }}{% endmacro %}{% set l = [] %}{% for i in 'x' * 40 %}{% set _ = l.append(m()) %}{% endfor %}`, alloc, jinja.LimitAllocBytes},
	} {
		// Each call alone is within the limits.
		once := strings.Replace(strings.Replace(c.src, "range(100)", "range(1)", 1), "'x' * 40", "'x'", 1)
		_, err := renderLimits(once, c.lim, nil)
		if err != nil {
			t.Errorf("%.80q once: %v", c.src, err)
		}
		_, err = renderLimits(c.src, c.lim, nil)
		wantLimit(t, c.src, err, c.limit)
	}
}

func TestLimitsZeroAndNegative(t *testing.T) {
	// A zero field is the default.
	_, err := renderLimits(`{{ range(100001)|length }}`, jinja.Limits{}, nil)
	wantLimit(t, "default range", err, jinja.LimitRange)
	if got := jinja.DefaultLimits().MaxRange; got != 100_000 {
		t.Errorf("default MaxRange %d", got)
	}
	// A negative one is no limit.
	got, err := renderLimits(`{{ range(100001)|length }}`, jinja.Limits{MaxRange: -1}, nil)
	if err != nil || got != "100001" {
		t.Errorf("no range limit: %q, %v", got, err)
	}
	// Render and RenderValues apply the defaults.
	tmpl, err := jinja.Compile(`{% for i in range(10**9) %}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(nil)
	wantLimit(t, "Render", err, jinja.LimitRange)
	_, err = tmpl.RenderValues(nil)
	wantLimit(t, "RenderValues", err, jinja.LimitRange)
}

func TestLimitErrorMessage(t *testing.T) {
	_, err := renderLimits(`{{ range(10**9) }}`, jinja.Limits{}, nil)
	if err == nil || err.Error() != "template exceeded its max_range limit (100000)" {
		t.Errorf("message: %v", err)
	}
	err = &jinja.LimitError{Limit: jinja.LimitTimeout, Value: int64(5 * time.Second)}
	if err.Error() != "template exceeded its timeout limit (5s)" {
		t.Errorf("message: %v", err)
	}
}

// TestCompileManyTags checks that whitespace control is linear in the
// number of tags: it used to search from every tag to the nearest text.
func TestCompileManyTags(t *testing.T) {
	src := "x" + strings.Repeat("{%- set a = 1 -%}", 100_000) + strings.Repeat("{{ a }}", 100_000)
	work := testkit.StartWork()
	tmpl, err := jinja.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	if d := work(); d > 2*time.Second {
		t.Errorf("compile took %v", d)
	}
	got, err := tmpl.Render(nil)
	if err != nil || got != "x"+strings.Repeat("1", 100_000) {
		t.Errorf("render: %.40q, %v", got, err)
	}
}

// TestCallableFromGo checks that the engine's own callables still work
// when called from Go, within a budget of their own.
func TestCallableFromGo(t *testing.T) {
	var got jinja.Value
	tmpl, err := jinja.Compile(`{% macro m(x) %}<{{ x }}>{% endmacro %}{{ keep(m) }}`)
	if err != nil {
		t.Fatal(err)
	}
	keep := jinja.NewCallable("keep", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		got = args[0]
		return jinja.None(), nil
	})
	if _, err := tmpl.RenderValues(map[string]jinja.Value{"keep": keep}); err != nil {
		t.Fatal(err)
	}
	v, err := got.AsCallable().Fn([]jinja.Value{jinja.NewString("a")}, nil)
	if err != nil || v.AsString() != "<a>" {
		t.Errorf("macro from Go: %v, %v", v, err)
	}
	rng, _ := jinja.Compile(`{{ keep(range) }}`)
	if _, err := rng.RenderValues(map[string]jinja.Value{"keep": keep}); err != nil {
		t.Fatal(err)
	}
	_, err = got.AsCallable().Fn([]jinja.Value{jinja.NewInt(1e9)}, nil)
	wantLimit(t, "range from Go", err, jinja.LimitRange)
}

// TestRealTemplatesWithinLimits renders the model templates of testdata
// with every captured request within a twentieth of the default limits:
// real templates are far from them.
func TestRealTemplatesWithinLimits(t *testing.T) {
	d := jinja.DefaultLimits()
	lim := jinja.Limits{
		MaxOutputBytes: d.MaxOutputBytes / 20,
		MaxValueBytes:  d.MaxValueBytes / 20,
		MaxAllocBytes:  d.MaxAllocBytes / 20,
		MaxSteps:       d.MaxSteps / 20,
		MaxRange:       d.MaxRange / 20,
		MaxDepth:       d.MaxDepth / 5,
	}
	requests := loadRequests(t)
	for _, name := range sortedTemplateNames() {
		tmpl, err := jinja.CompileLimits(chatTemplates[name], lim)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, reqName := range sortedKeys(requests) {
			data := buildRenderData(requests[reqName])
			want, wantErr := tmpl.Render(data)
			got, err := tmpl.RenderLimits(data, lim)
			var le *jinja.LimitError
			if errors.As(err, &le) {
				t.Errorf("%s/%s: %v", name, reqName, err)
				continue
			}
			if got != want || (err == nil) != (wantErr == nil) {
				t.Errorf("%s/%s: renders differ within tighter limits", name, reqName)
			}
		}
	}
}
