package convert

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"wasmllm/internal/testkit/golden"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/source"
	"wasmllm/tokenizer"
)

const testdata = "../testdata"

func readGolden(t *testing.T, name string) *golden.File {
	t.Helper()
	return golden.Read(t, filepath.Join(testdata, "golden", name))
}

// convertTo converts in into a fresh folder under t.TempDir.
func convertTo(t *testing.T, in string, quant string, mod ...func(*Options)) (string, *Report) {
	t.Helper()
	o := Options{In: in, Out: filepath.Join(t.TempDir(), "model"), Quant: quant, Workers: 2}
	for _, m := range mod {
		m(&o)
	}
	r, err := Convert(context.Background(), o)
	if err != nil {
		t.Fatalf("convert %s -quant %s: %v", in, quant, err)
	}
	return o.Out, r
}

// loadFolder reads a converted folder the way cmd/generate does.
func loadFolder(t *testing.T, dir string) (*model.Weights, *tokenizer.Tokenizer) {
	t.Helper()
	w, tok, err := source.Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if tok == nil {
		t.Fatalf("%s: no tokenizer", dir)
	}
	return w, tok
}

func rowError(got, want []float32) float64 {
	e, _ := golden.RowError(got, want)
	return e
}

func argmax(row []float32) int32 { return golden.Argmax(row) }

// run evaluates g's prompt and greedy steps on w with the CPU backend and
// returns every logits row (prompt rows, then one per greedy step) and the
// greedy ids.
func runGolden(t *testing.T, w *model.Weights, g *golden.File) ([][]float32, []int32) {
	t.Helper()
	m, err := model.Build(cpu.New(2), w)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.Vocab
	cache, err := m.NewCache(len(g.Tokens) + len(g.Greedy) + 1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(cache, g.Tokens, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]float32, len(g.Tokens)*V)
	if err := m.Backend().ReadF32(out, all); err != nil {
		t.Fatal(err)
	}
	var rows [][]float32
	for r := range g.Tokens {
		rows = append(rows, all[r*V:(r+1)*V])
	}
	var ids []int32
	row := rows[len(rows)-1]
	for step := range g.Greedy {
		id := argmax(row)
		ids = append(ids, id)
		if step == len(g.Greedy)-1 {
			break
		}
		// Feed the golden id, so one early divergence does not hide the rest.
		out, err := m.Forward(cache, []int32{g.Greedy[step]}, len(g.Tokens)+step, false)
		if err != nil {
			t.Fatal(err)
		}
		row = make([]float32, V)
		if err := m.Backend().ReadF32(out, row); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	return rows, ids
}

// checkExact asserts the golden's tolerance on every row and identical
// greedy ids.
func checkExact(t *testing.T, w *model.Weights, g *golden.File) {
	t.Helper()
	rows, ids := runGolden(t, w, g)
	want := append(append([][]float32{}, g.Logits...), g.GreedyLogits...)
	worst := 0.0
	for i := range min(len(rows), len(want)) {
		e := rowError(rows[i], want[i])
		worst = math.Max(worst, e)
		if e > g.Tolerance {
			t.Errorf("row %d: error %.3g > tolerance %.3g", i, e, g.Tolerance)
		}
	}
	for i := range g.Greedy {
		if ids[i] != g.Greedy[i] {
			t.Fatalf("greedy step %d: id %d, want %d", i, ids[i], g.Greedy[i])
		}
	}
	t.Logf("worst row error %.3g", worst)
}

// sourceWeights reads in whole with package source.
func sourceWeights(t *testing.T, in string) *model.Weights {
	t.Helper()
	w, err := source.Weights(in)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func f32(t *testing.T, x *loader.Tensor) []float32 {
	t.Helper()
	f, err := x.F32()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// listDir returns the names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// tinyF32 is tiny model m's F32 GGUF (under testdata/models, no extension):
// the F32 original, or for tiny-qwen3moe its q8_0 file dequantised (the F32
// original and its goldens are in ../shared, read by make test-extended).
func tinyF32(m string) string {
	if m == "tiny-qwen3moe" {
		return "tiny-qwen3moe-dq8"
	}
	return m + "-f32"
}

// f32Golden is the golden of tinyF32(m): the exact golden of the F32
// original, or for the dequantised file the forward of that file itself on
// the q8_0 golden's prompt (selfGolden): what a lossless conversion must
// reproduce. The q8_0 and q4_0 goldens check the MoE's numerics.
func f32Golden(t *testing.T, m string) *golden.File {
	t.Helper()
	if m != "tiny-qwen3moe" {
		return readGolden(t, m+"-f32.golden")
	}
	g := readGolden(t, "tiny-qwen3moe-q8_0.golden")
	return selfGolden(t, sourceWeights(t, filepath.Join(testdata, "models", tinyF32(m)+".gguf")), g.Tokens, len(g.Greedy))
}

// selfGolden runs tokens and then steps greedy steps on w (CPU backend,
// each step fed its own argmax) and returns them as a golden file with
// tolerance 1e-6, its rows laid out as runGolden returns them.
func selfGolden(t *testing.T, w *model.Weights, tokens []int32, steps int) *golden.File {
	t.Helper()
	m, err := model.Build(cpu.New(2), w)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.Vocab
	cache, err := m.NewCache(len(tokens) + steps + 1)
	if err != nil {
		t.Fatal(err)
	}
	g := &golden.File{Kind: "exact", Tolerance: 1e-6, Tokens: tokens}
	out, err := m.Forward(cache, tokens, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]float32, len(tokens)*V)
	if err := m.Backend().ReadF32(out, all); err != nil {
		t.Fatal(err)
	}
	for r := range tokens {
		g.Logits = append(g.Logits, all[r*V:(r+1)*V])
	}
	row := g.Logits[len(tokens)-1]
	for step := range steps {
		id := argmax(row)
		g.Greedy = append(g.Greedy, id)
		if step == steps-1 {
			break
		}
		if out, err = m.Forward(cache, []int32{id}, len(tokens)+step, false); err != nil {
			t.Fatal(err)
		}
		row = make([]float32, V)
		if err := m.Backend().ReadF32(out, row); err != nil {
			t.Fatal(err)
		}
		g.GreedyLogits = append(g.GreedyLogits, row)
	}
	return g
}
