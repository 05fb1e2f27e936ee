// Package embedgolden reads the embedding goldens of testdata/embed and the
// shared testdata-embed (llama.cpp's pooled vectors, before and after L2
// normalisation, and per-token hidden rows; the folder's README is the
// spec) and checks an embedder against them.
package embedgolden

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

// File is one golden: `<model>.json` (or its gzip, `.json.gz`).
type File struct {
	Model                string      `json:"model"`
	Kind                 string      `json:"kind"`
	Tolerance            *float64    `json:"tolerance"`
	NativeMinCosine      float64     `json:"native_min_cosine"`
	Arch                 string      `json:"arch"`
	NEmbdOut             int         `json:"n_embd_out"`
	Pooling              string      `json:"pooling"`
	InputNames           []string    `json:"input_names"`
	InputTexts           []string    `json:"input_texts"`
	AddSpecial           []bool      `json:"add_special"`
	Inputs               [][]int32   `json:"inputs"`
	Batches              [][]int     `json:"batches"`
	Embeddings           [][]float32 `json:"embeddings"`
	EmbeddingsNormalized [][]float32 `json:"embeddings_normalized"`
	TokenInput           int         `json:"token_embeddings_input"`
	TokenEmbeddings      [][]float32 `json:"token_embeddings"`
}

// Read reads a golden, gzip-compressed when its name ends in .gz, and
// checks that its lists agree in length.
func Read(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	var g File
	if err := json.NewDecoder(r).Decode(&g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	n := len(g.Inputs)
	if n == 0 || len(g.Embeddings) != n || len(g.EmbeddingsNormalized) != n || len(g.InputNames) != n {
		return nil, fmt.Errorf("%s: %d inputs, %d embeddings, %d normalised, %d names", path, n, len(g.Embeddings), len(g.EmbeddingsNormalized), len(g.InputNames))
	}
	if g.TokenInput < 0 || g.TokenInput >= n || len(g.TokenEmbeddings) != len(g.Inputs[g.TokenInput]) {
		return nil, fmt.Errorf("%s: %d token embeddings for input %d", path, len(g.TokenEmbeddings), g.TokenInput)
	}
	return &g, nil
}

// RelErr is the golden metric: max|got-want| / max|want| (+Inf on a length
// mismatch or NaN).
func RelErr(got, want []float32) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var maxD, maxW float64
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		maxD = math.Max(maxD, d)
		maxW = math.Max(maxW, math.Abs(float64(want[i])))
	}
	return maxD / math.Max(maxW, 1e-30)
}

// Cosine is the cosine similarity of a and b.
func Cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// Embedder is what Check runs: a batch of inputs to pooled vectors (not
// normalised), one input to its per-token rows, and the normalisation.
type Embedder struct {
	Embed     func(seqs [][]int32) ([][]float32, error)
	Hidden    func(ids []int32) ([][]float32, error) // nil: per-token rows not checked
	Normalize func(v []float32) []float32
}

// Check runs every batch of g (each input of a batch together, as one
// batch) and compares the pooled and normalised vectors, then the
// per-token rows: exact goldens within their tolerance (scaled by
// tolScale, 1 for the CPU), native ones by cosine. It returns the worst
// metric seen.
func Check(t *testing.T, g *File, e Embedder, tolScale float64) float64 {
	t.Helper()
	worst := 0.0
	cmp := func(what string, got, want []float32) {
		t.Helper()
		if g.Kind == "exact" {
			tol := *g.Tolerance * tolScale
			d := RelErr(got, want)
			worst = math.Max(worst, d)
			if d > tol {
				t.Errorf("%s: rel err %.3g > %.3g", what, d, tol)
			}
			return
		}
		c := Cosine(got, want)
		worst = math.Max(worst, 1-c)
		if c < g.NativeMinCosine {
			t.Errorf("%s: cosine %.6f < %.6f", what, c, g.NativeMinCosine)
		}
	}
	for _, batch := range g.Batches {
		seqs := make([][]int32, len(batch))
		for i, k := range batch {
			seqs[i] = g.Inputs[k]
		}
		vecs, err := e.Embed(seqs)
		if err != nil {
			t.Fatalf("batch %v: %v", batch, err)
		}
		if len(vecs) != len(batch) {
			t.Fatalf("batch %v: %d vectors", batch, len(vecs))
		}
		for i, k := range batch {
			cmp(fmt.Sprintf("input %s (batch %v) pooled", g.InputNames[k], batch), vecs[i], g.Embeddings[k])
			cmp(fmt.Sprintf("input %s (batch %v) normalised", g.InputNames[k], batch), e.Normalize(vecs[i]), g.EmbeddingsNormalized[k])
		}
	}
	if e.Hidden != nil {
		rows, err := e.Hidden(g.Inputs[g.TokenInput])
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(g.TokenEmbeddings) {
			t.Fatalf("%d per-token rows, want %d", len(rows), len(g.TokenEmbeddings))
		}
		for i := range rows {
			cmp(fmt.Sprintf("token %d of %s", i, g.InputNames[g.TokenInput]), rows[i], g.TokenEmbeddings[i])
		}
	}
	return worst
}
