package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"wasmllm/internal/testkit/embedgolden"
)

// TestGolden runs the command on every input of the vendored goldens (as
// -tokens, and the texts with specials as -input) and compares the printed
// embedding and normalised vector with llama.cpp's.
func TestGolden(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "embed")
	for _, name := range []string{"tiny-bert-cls-q4_0", "tiny-nomic-bert-q4_0", "tiny-qwen3-embed-q4_0"} {
		g, err := embedgolden.Read(filepath.Join(dir, "golden", name+".json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		for i, ids := range g.Inputs {
			var s []string
			for _, id := range ids {
				s = append(s, strconv.Itoa(int(id)))
			}
			args := [][]string{{"-tokens", strings.Join(s, ",")}}
			if g.AddSpecial[i] {
				args = append(args, []string{"-input", g.InputTexts[i]})
			}
			for _, a := range args {
				c, err := parseFlags(append([]string{"-model", filepath.Join(dir, "models", name+".gguf")}, a...))
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				if err := run(context.Background(), c, &out, io.Discard); err != nil {
					t.Fatalf("%s %v: %v", name, a[0], err)
				}
				var o output
				if err := json.Unmarshal(out.Bytes(), &o); err != nil {
					t.Fatal(err)
				}
				if o.Tokens != len(ids) {
					t.Errorf("%s input %s %s: %d tokens, want %d", name, g.InputNames[i], a[0], o.Tokens, len(ids))
				}
				if d := embedgolden.RelErr(o.Embedding, g.Embeddings[i]); d > *g.Tolerance {
					t.Errorf("%s input %s %s: embedding rel err %.3g", name, g.InputNames[i], a[0], d)
				}
				if d := embedgolden.RelErr(o.Normalized, g.EmbeddingsNormalized[i]); d > *g.Tolerance {
					t.Errorf("%s input %s %s: normalized rel err %.3g", name, g.InputNames[i], a[0], d)
				}
			}
		}
	}
}

// TestFlags: the command's usage errors.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-model", "m"},
		{"-model", "m", "-input", "a", "-tokens", "1"},
		{"-model", "m", "-input", "a", "-backend", "tpu"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if _, err := parseFlags([]string{"-model", "m", "-input", ""}); err != nil {
		t.Errorf("empty -input: %v", err)
	}
	c, _ := parseFlags([]string{"-model", filepath.Join("..", "..", "testdata", "embed", "models", "tiny-bert-cls-q4_0.gguf"), "-tokens", "101,x"})
	if err := run(context.Background(), c, &bytes.Buffer{}, io.Discard); err == nil {
		t.Error("-tokens 101,x: no error")
	}
}

// TestWebGPU runs the command with -backend webgpu (in headless Chromium,
// through wasmexec) and compares its output with llama.cpp's golden.
func TestWebGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the command for the browser and starts Chromium")
	}
	dir := filepath.Join("..", "..", "testdata", "embed")
	g, err := embedgolden.Read(filepath.Join(dir, "golden", "tiny-nomic-bert-q4_0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseFlags([]string{"-model", filepath.Join(dir, "models", "tiny-nomic-bert-q4_0.gguf"), "-backend", "webgpu", "-input", g.InputTexts[2]})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), c, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var o output
	if err := json.Unmarshal(out.Bytes(), &o); err != nil {
		t.Fatalf("%v: %q", err, out.String())
	}
	if d := embedgolden.RelErr(o.Normalized, g.EmbeddingsNormalized[2]); d > *g.Tolerance || o.Tokens != len(g.Inputs[2]) {
		t.Errorf("webgpu: rel err %.3g, %d tokens", d, o.Tokens)
	}
}
