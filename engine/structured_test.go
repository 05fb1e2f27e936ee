package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"wasmllm/cpu"
	"wasmllm/grammar"
	"wasmllm/internal/shareddata"
	"wasmllm/sampler"
)

// TestSchemaSamples: on every test model (random weights), temperature 1
// and a seed per sample, constrained samples for every schema of
// grammar/testdata/schemas parse and validate against a real JSON Schema
// validator (santhosh-tekuri/jsonschema, formats asserted): 200 per schema
// on stories260K (llama2.c vocabulary, byte fallback) and tiny-qwen3moe
// (byte-level BPE), 40 on tiny-llama3 and tiny-qwen3, which are four
// times slower per token (200 on every model with WASMLLM_EXTENDED=1).
//
// Random weights do not know when to close a string (the closing quote is
// one token in hundreds), so some samples run to max_tokens: those are
// counted, not validated, and must stay under a third; every sample that
// finishes must be valid.
func TestSchemaSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	files, err := filepath.Glob("../grammar/testdata/schemas/*.json")
	if err != nil || len(files) < 30 {
		t.Fatalf("%d schemas (%v)", len(files), err)
	}
	type schemaCase struct {
		name string
		g    *grammar.Grammar
		v    *jsonschema.Schema
	}
	var cases []schemaCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var sf struct {
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(data, &sf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		src, err := grammar.JSONSchemaGBNF(sf.Schema)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		g, err := grammar.Compile(src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cases = append(cases, schemaCase{strings.TrimSuffix(filepath.Base(f), ".json"), g, validatorFor(t, sf.Schema)})
	}
	const maxTokens = 192
	samplesFor := map[string]int{"stories260K.gguf": 200, "tiny-qwen3moe-q8_0.gguf": 200, "tiny-llama3-q8_0.gguf": 40, "tiny-qwen3-q4_0.gguf": 40}
	for _, path := range testModels {
		model := filepath.Base(path)
		samples := samplesFor[model]
		if shareddata.Extended() {
			samples = 200
		}
		// Two engines share the samples: one per core.
		const workers = 2
		engines := []*Engine{loadOn(t, path, cpu.New(1)), loadOn(t, path, cpu.New(1))}
		var mu sync.Mutex
		total, cut, tokens := 0, 0, 0
		t0 := time.Now()
		for _, c := range cases {
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < samples; i += workers {
						seed := int64(1000*i + len(c.name))
						p := sampler.DefaultParams()
						p.MaxTokens, p.Seed = maxTokens, &seed
						res, err := engines[w].Generate(t.Context(), &Request{Prompt: "Once upon a time", Params: p, Grammar: c.g}, func(Token) error { return nil })
						mu.Lock()
						total++
						switch {
						case err != nil:
							t.Errorf("%s %s sample %d: %v", model, c.name, i, err)
						case res.Finish.Reason == sampler.FinishLength:
							cut++
						case res.Finish.Reason != sampler.FinishStop:
							t.Errorf("%s %s sample %d: finish %+v: %q", model, c.name, i, res.Finish, res.Text)
						default:
							if err := validateText(c.v, res.Text); err != nil {
								t.Errorf("%s %s sample %d: %q: %v", model, c.name, i, res.Text, err)
							}
						}
						if res != nil {
							tokens += len(res.Tokens)
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
		}
		t.Logf("%s: %d schemas x %d samples in %v (%d tokens): %d valid, %d cut at %d tokens",
			model, len(cases), samples, time.Since(t0).Round(time.Millisecond), tokens, total-cut, cut, maxTokens)
		if cut*3 > total {
			t.Errorf("%s: %d of %d samples ran to max_tokens", model, cut, total)
		}
	}
}

func validatorFor(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateText(s *jsonschema.Schema, text string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(v)
}
