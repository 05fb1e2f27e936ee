package embed_test

import (
	"errors"
	"path/filepath"
	"testing"

	"wasmllm/cpu"
	"wasmllm/embed"
	"wasmllm/internal/testkit/embedgolden"
	"wasmllm/model"
)

var vendored = []string{"tiny-bert-cls-q4_0", "tiny-nomic-bert-q4_0", "tiny-qwen3-embed-q4_0", "tiny-gemma-embedding-q4_0"}

func open(t *testing.T, name string) (*embed.Model, *embedgolden.File) {
	t.Helper()
	dir := filepath.Join("..", "testdata", "embed")
	m, err := embed.OpenGGUF(filepath.Join(dir, "models", name+".gguf"), cpu.New(0))
	if err != nil {
		t.Fatal(err)
	}
	g, err := embedgolden.Read(filepath.Join(dir, "golden", name+".json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return m, g
}

// TestTexts embeds the goldens' texts (tokenized with specials, as
// llama.cpp's /v1/embeddings does) in one call and checks the ids the
// model read and the normalised vectors against llama.cpp's.
func TestTexts(t *testing.T) {
	for _, name := range vendored {
		t.Run(name, func(t *testing.T) {
			m, g := open(t, name)
			var inputs []embed.Input
			var want [][]float32
			for i, text := range g.InputTexts {
				if !g.AddSpecial[i] {
					continue // "one": a word tokenized without specials
				}
				ids, err := m.Tokenize(text, false)
				if err != nil {
					t.Fatal(err)
				}
				if !slicesEqual(ids, g.Inputs[i]) {
					t.Fatalf("input %s: ids %v, want %v", g.InputNames[i], ids, g.Inputs[i])
				}
				inputs = append(inputs, embed.Text(text))
				want = append(want, g.EmbeddingsNormalized[i])
			}
			res, err := m.Embed(inputs, embed.Options{MaxBatchTokens: 70})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if d := embedgolden.RelErr(r.Normalized, want[i]); d > *g.Tolerance {
					t.Errorf("input %d: rel err %.3g", i, d)
				}
			}
		})
	}
}

func slicesEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTruncation: an input over the model's length is an error naming it
// unless truncation is asked for; truncated text keeps [CLS] and [SEP].
func TestTruncation(t *testing.T) {
	m, _ := open(t, "tiny-bert-cls-q4_0")
	long := ""
	for range 200 {
		long += "the sun "
	}
	_, err := m.Embed([]embed.Input{embed.Text("the cat"), embed.Text(long)}, embed.Options{})
	var ie *model.InputError
	if !errors.As(err, &ie) || ie.Index != 1 || !errors.Is(err, model.ErrInputTooLong) {
		t.Fatalf("too long: %v", err)
	}
	ids, err := m.Tokenize(long, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != m.E.MaxTokens() || ids[0] != 101 || ids[len(ids)-1] != 102 {
		t.Fatalf("truncated to %d ids, first %d last %d", len(ids), ids[0], ids[len(ids)-1])
	}
	res, err := m.Embed([]embed.Input{embed.Text(long)}, embed.Options{Truncate: true, Dimensions: 32})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Tokens != m.E.MaxTokens() || len(res[0].Normalized) != 32 || len(res[0].Embedding) != 32 {
		t.Fatalf("tokens %d, %d dims", res[0].Tokens, len(res[0].Normalized))
	}
	var de *embed.DimensionsError
	if _, err := m.Embed([]embed.Input{embed.Text("x")}, embed.Options{Dimensions: m.Dim + 1}); !errors.As(err, &de) {
		t.Fatalf("dimensions over: %v", err)
	}
	if _, err := m.Embed([]embed.Input{embed.Tokens(nil)}, embed.Options{}); !errors.As(err, &ie) {
		t.Fatalf("empty ids: %v", err)
	}
}
