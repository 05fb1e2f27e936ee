// Package golden reads the golden files of testdata/golden (llama.cpp's
// logits and greedy ids, see testdata/README.md), stored in the compact
// .golden format of format.go, and compares rows the way those files define
// a match.
package golden

import (
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// File is one golden file. The json tags name the keys of the original
// JSON golden (and of the .golden header).
type File struct {
	Model        string      `json:"model"` // model path, relative to the file's folder
	Kind         string      `json:"kind"`  // "exact" or "quantized-native"
	Tolerance    float64     `json:"tolerance"`
	Tokens       []int32     `json:"tokens"`
	Logits       [][]float32 `json:"logits"`        // one row per prompt position (per Positions when thinned)
	Positions    []int       `json:"positions"`     // a thinned file's prompt position of each Logits row; nil: every position
	Greedy       []int32     `json:"greedy"`        // the greedy continuation
	GreedyLogits [][]float32 `json:"greedy_logits"` // the row after each greedy step
	Name         string      `json:"-"`             // base name of the file
	Path         string      `json:"-"`
}

// Read parses a .golden file, failing t on error: a header it does not
// know, rows that do not match the header's counts or sha256.
func Read(t testing.TB, path string) *File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decode := Decode
	if filepath.Ext(path) == ".json" { // the original form (the shared data)
		decode = DecodeJSON
	}
	f, err := decode(b)
	if err != nil {
		t.Fatalf("golden file %s: %v", path, err)
	}
	f.Name, f.Path = filepath.Base(path), path
	return f
}

// Position is the prompt position of Logits[r].
func (f *File) Position(r int) int {
	if f.Positions != nil {
		return f.Positions[r]
	}
	return r
}

// ModelPath is the model the file was made from.
func (f *File) ModelPath() string { return filepath.Join(filepath.Dir(f.Path), f.Model) }

// Files lists the golden files (*.golden) of dir (testdata/golden) of the
// given kind, sorted; story and long files are included only when asked.
func Files(t testing.TB, dir, kind string, long, story bool) []*File {
	t.Helper()
	return files(t, filepath.Join(dir, "*.golden"), kind, long, story)
}

// FilesJSON is Files for a folder of goldens in their original JSON form
// (the shared data's, see internal/testkit/shareddata).
func FilesJSON(t testing.TB, dir, kind string, long, story bool) []*File {
	t.Helper()
	return files(t, filepath.Join(dir, "*.json"), kind, long, story)
}

func files(t testing.TB, pattern, kind string, long, story bool) []*File {
	t.Helper()
	dir := filepath.Dir(pattern)
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files in %s", dir)
	}
	sort.Strings(paths)
	var out []*File
	for _, p := range paths {
		base := filepath.Base(p)
		if (!long && strings.Contains(base, ".long.")) || (!story && strings.Contains(base, ".story.")) || base == "dequant-rows.json" {
			continue
		}
		if f := Read(t, p); kind == "" || f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// RowError is max|got-want| / max|want| (the files' tolerance measure) and
// the index of the worst element.
func RowError(got, want []float32) (float64, int) {
	var maxW, maxD float64
	worst := 0
	for i := range want {
		maxW = math.Max(maxW, math.Abs(float64(want[i])))
		d := math.Abs(float64(got[i] - want[i]))
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		if d > maxD {
			maxD, worst = d, i
		}
	}
	return maxD / maxW, worst
}

// Argmax is the index of the row's maximum, the lowest on ties.
func Argmax(row []float32) int32 {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return int32(best)
}

// NativeMatch applies the loose rule of "quantized-native" files to one
// row: it returns whether the argmax agrees, and mean |got-want| and the
// row's standard deviation (a match needs mean <= 0.1 × std).
func NativeMatch(got, want []float32) (bool, float64, float64) {
	var mean, diff float64
	for i := range want {
		mean += float64(want[i])
		diff += math.Abs(float64(got[i] - want[i]))
	}
	mean /= float64(len(want))
	var v float64
	for _, x := range want {
		v += (float64(x) - mean) * (float64(x) - mean)
	}
	return Argmax(got) == Argmax(want), diff / float64(len(want)), math.Sqrt(v / float64(len(want)))
}
