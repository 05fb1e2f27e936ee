//go:build js

package cpu

import (
	"testing"

	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
)

// TestGemmaGoldenInBrowser runs the vendored tiny-gemma3-q4_0,
// tiny-gemma4-q4_0 and tiny-gemma4moe-q4_0 goldens on the CPU engine in the browser (its SIMD128
// matmuls and attention, Go's GeGLU; a Gemma 4 layer sharing KV attends
// in Go): the prompt in one batch against every row, then the greedy ids
// one token at a time against greedy_logits.
func TestGemmaGoldenInBrowser(t *testing.T) {
	for _, name := range []string{"tiny-gemma3-q4_0", "tiny-gemma4-q4_0", "tiny-gemma4moe-q4_0"} {
		t.Run(name, func(t *testing.T) { gemmaGoldenInBrowser(t, "../testdata/gemma/golden/"+name+".golden") })
	}
}

func gemmaGoldenInBrowser(t *testing.T, path string) {
	g := golden.Read(t, path)
	f, err := loader.ReadGGUF(g.ModelPath())
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.Vocab
	cache, err := m.NewCache(len(g.Tokens) + len(g.Greedy) + 1)
	if err != nil {
		t.Fatal(err)
	}
	read := func(ids []int32, pos int, all bool) []float32 {
		logits, err := m.Forward(cache, ids, pos, all)
		if err != nil {
			t.Fatal(err)
		}
		n := V
		if all {
			n = len(ids) * V
		}
		out := make([]float32, n)
		if err := m.Backend().ReadF32(logits, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	worst := 0.0
	check := func(what string, got, want []float32) {
		e, i := golden.RowError(got, want)
		worst = max(worst, e)
		if e > g.Tolerance {
			t.Errorf("%s: error %.3g > %.3g at index %d: got %v want %v", what, e, g.Tolerance, i, got[i], want[i])
		}
	}
	rows := read(g.Tokens, 0, true)
	for r, want := range g.Logits {
		p := g.Position(r)
		check("prompt row", rows[p*V:(p+1)*V], want)
	}
	row := rows[(len(g.Tokens)-1)*V:]
	for step, want := range g.Greedy {
		if id := golden.Argmax(row); id != want {
			t.Fatalf("greedy step %d: id %d, want %d", step, id, want)
		}
		if step == len(g.Greedy)-1 {
			break
		}
		row = read([]int32{want}, len(g.Tokens)+step, false)
		if step < len(g.GreedyLogits) {
			check("greedy row", row, g.GreedyLogits[step])
		}
	}
	t.Logf("worst row error %.3g (tolerance %.3g)", worst, g.Tolerance)
}
