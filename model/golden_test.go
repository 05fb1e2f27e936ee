package model_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

type golden struct {
	Model        string      `json:"model"`
	Kind         string      `json:"kind"`
	Tolerance    float64     `json:"tolerance"`
	Tokens       []int32     `json:"tokens"`
	Logits       [][]float32 `json:"logits"`
	Greedy       []int32     `json:"greedy"`
	GreedyLogits [][]float32 `json:"greedy_logits"`
}

func readGolden(t *testing.T, path string) *golden {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &g
}

// rowError is max|got-want| / max|want| and the index of the worst element.
func rowError(got, want []float32) (float64, int) {
	var maxW, maxD float64
	worst := 0
	for i := range want {
		maxW = math.Max(maxW, math.Abs(float64(want[i])))
		if d := math.Abs(float64(got[i] - want[i])); d > maxD {
			maxD, worst = d, i
		}
	}
	return maxD / maxW, worst
}

func loadWeights(t *testing.T, path string) *model.Weights {
	t.Helper()
	g, err := loader.ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// checkGolden runs the prompt in one batch, compares every position's
// logits, then decodes greedily one token at a time through the cache.
func checkGolden(t *testing.T, m *model.Model, g *golden, tol float64) {
	t.Helper()
	b := m.Backend()
	V := m.Config.Vocab
	cache, err := m.NewCache(len(g.Tokens) + len(g.Greedy) + 1)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Forward(cache, g.Tokens, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]float32, len(g.Tokens)*V)
	if err := b.ReadF32(logits, all); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	defer func() { t.Logf("worst row error %.3g (tolerance %.3g)", worst, tol) }()
	for r, want := range g.Logits {
		got := all[r*V : (r+1)*V]
		e, i := rowError(got, want)
		worst = math.Max(worst, e)
		if e > tol {
			t.Errorf("prompt row %d: error %.3g > %.3g at index %d: got %v want %v", r, e, tol, i, got[i], want[i])
		}
	}
	row := all[(len(g.Tokens)-1)*V:]
	pos := len(g.Tokens)
	for step, want := range g.Greedy {
		id := argmax(row)
		if id != want {
			t.Fatalf("greedy step %d: got id %d want %d", step, id, want)
		}
		if step == len(g.Greedy)-1 {
			break
		}
		logits, err := m.Forward(cache, []int32{id}, pos, false)
		if err != nil {
			t.Fatal(err)
		}
		pos++
		row = make([]float32, V)
		if err := b.ReadF32(logits, row); err != nil {
			t.Fatal(err)
		}
		if step < len(g.GreedyLogits) {
			e, i := rowError(row, g.GreedyLogits[step])
			worst = math.Max(worst, e)
			if e > tol {
				t.Errorf("greedy step %d logits: error %.3g > %.3g at index %d: got %v want %v", step, e, tol, i, row[i], g.GreedyLogits[step][i])
			}
		}
	}
}

func argmax(row []float32) int32 {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return int32(best)
}

func TestGoldenCPU(t *testing.T) {
	files, _ := filepath.Glob("../testdata/golden/*.json")
	n := 0
	for _, f := range files {
		if strings.Contains(f, "story") {
			continue
		}
		g := readGolden(t, f)
		if g.Kind != "exact" {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			w := loadWeights(t, filepath.Join("../testdata/golden", g.Model))
			m, err := model.Build(cpu.New(0), w)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, m, g, g.Tolerance)
		})
	}
	if n < 20 {
		t.Fatalf("only %d exact golden files found", n)
	}
}
