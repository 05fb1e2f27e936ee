package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"wasmllm/internal/testkit"
)

// llama2Variant loads testdata/tokenizer/llama2/tokenizer.json with some
// of its top-level fields replaced.
func llama2Variant(t *testing.T, fields map[string]string) *Tokenizer {
	t.Helper()
	p := filepath.Join(testdata, "tokenizer", "llama2", "tokenizer.json")
	data, err := os.ReadFile(p)
	testkit.Need(t, err == nil, "%s missing (run make testdata): %v", p, err)
	var f map[string]json.RawMessage
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		f[k] = json.RawMessage(v)
	}
	if data, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	tk, err := FromHFJSON(data, nil)
	if err != nil {
		t.Fatalf("FromHFJSON: %v", err)
	}
	return tk
}

// TestMetaspaceLlama2 checks the older form of the SentencePiece
// tokenizer.json, with no normalizer and a Metaspace pre-tokenizer, on the
// llama2 goldens. Metaspace prepends '▁' only to text that does not start
// with it, and "first" only at the start of the input, so the lines
// compared are those whose text starts with neither a space nor '▁',
// encoded with special tokens as text (a single segment).
func TestMetaspaceLlama2(t *testing.T) {
	lines := readJSONL[goldenLine](t, filepath.Join(testdata, "tokenizer", "llama2.jsonl.gz"))
	for _, scheme := range []string{"first", "always"} {
		tk := llama2Variant(t, map[string]string{
			"normalizer":    "null",
			"pre_tokenizer": `{"type":"Metaspace","replacement":"▁","prepend_scheme":"` + scheme + `","split":false}`,
		})
		n := 0
		for i, g := range lines {
			if g.Text == "" || strings.HasPrefix(g.Text, " ") || strings.HasPrefix(g.Text, spmSpace) {
				continue
			}
			n++
			if d := diffIDs(tk.mustEncodeOpts(g.Text, EncodeOptions{SpecialAsText: true}), g.IDsSpecialAsText); d != "" {
				t.Errorf("%s line %d (%s): text %q\n%s", scheme, i+1, g.Case, g.Text, d)
			}
		}
		t.Logf("%s: %d lines", scheme, n)
	}
	// The decoder written as Metaspace: the same decode without byte
	// fallback runs.
	tk := llama2Variant(t, map[string]string{"decoder": `{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}`})
	hello, _ := tk.TokenID("▁Hello")
	world, _ := tk.TokenID("▁world")
	if got := tk.Decode([]int32{hello, world}); got != "Hello world" {
		t.Errorf("Metaspace decoder: %q", got)
	}
	// "first": no '▁' after a special token at the start; "always": one.
	for scheme, want := range map[string][]string{"first": {"<s>", "Hello"}, "always": {"<s>", "▁Hello"}} {
		tk := llama2Variant(t, map[string]string{
			"normalizer":    "null",
			"pre_tokenizer": `{"type":"Metaspace","replacement":"▁","prepend_scheme":"` + scheme + `","split":true}`,
		})
		var got []string
		for _, id := range tk.mustEncode("<s>Hello", false) {
			got = append(got, tk.TokenText(id))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: <s>Hello gives %q, want %q", scheme, got, want)
		}
	}
}

// TestMetaspaceSplit checks split: the text is cut before each '▁'
// (Hugging Face's MergedWithNext).
func TestMetaspaceSplit(t *testing.T) {
	for _, c := range []struct {
		in     string
		scheme string
		want   []string
	}{
		{"Hello world", "always", []string{"▁Hello", "▁world"}},
		{"  x", "always", []string{"▁", "▁x"}},
		{"ab c", "never", []string{"ab", "▁c"}},
		{"a▁b", "never", []string{"a", "▁b"}},
		{"", "always", nil},
		{"x ", "first", []string{"▁x", "▁"}},
	} {
		m := &metaspace{replacement: spmSpace, scheme: c.scheme, split: true}
		var got []string
		m.run(c.in, true, func(s string) { got = append(got, s) })
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q %s: %q, want %q", c.in, c.scheme, got, c.want)
		}
	}
}
