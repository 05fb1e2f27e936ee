package sampler

import (
	"math"
	"slices"
	"testing"
)

const draws = 20000

// chiSquare draws 20,000 tokens (fixed seed, so the test is deterministic)
// and compares the counts with the expected probabilities: categories with
// an expected count below 5 are pooled, and the statistic must stay below
// the 0.999 quantile. It also checks that no zero-probability token is
// drawn.
func chiSquare(t *testing.T, p Params, row []float32, want []float64) {
	t.Helper()
	s := newSampler(t, p, len(row), nil, nil, nil)
	counts := make([]int, len(row))
	buf := make([]float32, len(row))
	for range draws {
		copy(buf, row)
		r, err := s.Sample(buf)
		if err != nil {
			t.Fatal(err)
		}
		if want[r.ID] == 0 {
			t.Fatalf("drew token %d, which has probability 0", r.ID)
		}
		counts[r.ID]++
	}
	var stat, pooledE, pooledO float64
	df := -1
	for i, q := range want {
		e := q * draws
		if e < 5 {
			pooledE += e
			pooledO += float64(counts[i])
			continue
		}
		d := float64(counts[i]) - e
		stat += d * d / e
		df++
	}
	if pooledE > 0 {
		d := pooledO - pooledE
		stat += d * d / max(pooledE, 1)
		df++
	}
	if df < 1 { // one category: every draw was it (checked above)
		return
	}
	// Wilson–Hilferty approximation of the chi-square 0.999 quantile.
	const z = 3.0902
	k := float64(df)
	crit := k * math.Pow(1-2/(9*k)+z*math.Sqrt(2/(9*k)), 3)
	t.Logf("chi-square %.2f with %d degrees of freedom (0.999 quantile %.2f)", stat, df, crit)
	if stat > crit {
		t.Errorf("chi-square %.2f > %.2f: counts %v, expected probabilities %v", stat, crit, counts, want)
	}
}

// softmaxKeep is softmax(x/temp) restricted to keep, in float64.
func softmaxKeep(row []float32, temp float64, keep func(i int, p []float64) bool) []float64 {
	p := make([]float64, len(row))
	var z float64
	for i, v := range row {
		p[i] = math.Exp(float64(v) / temp)
		z += p[i]
	}
	for i := range p {
		p[i] /= z
	}
	out := make([]float64, len(p))
	z = 0
	for i := range p {
		if keep(i, p) {
			out[i] = p[i]
			z += p[i]
		}
	}
	for i := range out {
		out[i] /= z
	}
	return out
}

var statRow = f32s(2.0, 1.5, 1.2, 0.9, 0.4, 0.0, -0.3, -1.1, -2.0, -3.5)

func all(int, []float64) bool { return true }

func TestChiSquareTemperature(t *testing.T) {
	for _, temp := range []float64{0.5, 1, 1.7} {
		chiSquare(t, params(func(p *Params) { p.Temperature = temp }), statRow, softmaxKeep(statRow, temp, all))
	}
}

func TestChiSquareTopK(t *testing.T) {
	for _, k := range []int{1, 3, 6} {
		chiSquare(t, params(func(p *Params) { p.TopK = k; p.Temperature = 0.8 }), statRow,
			softmaxKeep(statRow, 0.8, func(i int, _ []float64) bool { return i < k })) // statRow is sorted
	}
}

func TestChiSquareTopP(t *testing.T) {
	for _, topP := range []float64{0.3, 0.8, 0.95} {
		want := softmaxKeep(statRow, 1, func(i int, p []float64) bool {
			var before float64
			for j := range i {
				before += p[j]
			}
			return before < topP
		})
		chiSquare(t, params(func(p *Params) { p.TopP = topP }), statRow, want)
		// The same through top_k (the narrow path) when it keeps everything.
		chiSquare(t, params(func(p *Params) { p.TopP = topP; p.TopK = 9 }), statRow, want)
	}
}

func TestChiSquareMinP(t *testing.T) {
	for _, minP := range []float64{0.05, 0.3} {
		want := softmaxKeep(statRow, 1.3, func(i int, p []float64) bool { return p[i] >= minP*p[0] })
		chiSquare(t, params(func(p *Params) { p.MinP = minP; p.Temperature = 1.3 }), statRow, want)
	}
}

// TestChiSquareLargeVocab runs the full-vocabulary paths (block sums and
// the nucleus histogram) on 2,500 tokens with a shuffled, peaked row.
func TestChiSquareLargeVocab(t *testing.T) {
	const V = 2500
	row := make([]float32, V)
	g := rng{state: 42}
	for i := range row {
		row[i] = float32(g.float64()*4 - 8)
	}
	for i, v := range []float32{3, 2.5, 2.2, 2, 1.5, 1, 0.5, 0.2} {
		row[(i*977+13)%V] = v
	}
	chiSquare(t, params(nil), row, softmaxKeep(row, 1, all))
	order := make([]int, V)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case row[a] > row[b]:
			return -1
		case row[a] < row[b]:
			return 1
		}
		return 0
	})
	rank := make([]int, V)
	for r, i := range order {
		rank[i] = r
	}
	want := softmaxKeep(row, 1, func(i int, p []float64) bool {
		var before float64
		for _, j := range order[:rank[i]] {
			before += p[j]
		}
		return before < 0.9
	})
	chiSquare(t, params(func(p *Params) { p.TopP = 0.9 }), row, want)
}

func TestSeeds(t *testing.T) {
	seq := func(seed int64) []int32 {
		s := newSampler(t, params(func(p *Params) { p.Seed = i64p(seed) }), len(statRow), nil, nil, nil)
		var out []int32
		for range 50 {
			r, err := s.Sample(slices.Clone(statRow))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r.ID)
		}
		return out
	}
	if a, b := seq(7), seq(7); !slices.Equal(a, b) {
		t.Errorf("seed 7 gave %v then %v", a, b)
	}
	if a, b := seq(7), seq(8); slices.Equal(a, b) {
		t.Errorf("seeds 7 and 8 gave the same tokens %v", a)
	}
	a := seq(-1) // -1 is vLLM's "no seed": fresh randomness each time
	b := seq(-1)
	if slices.Equal(a, b) {
		t.Errorf("two unseeded runs gave the same 50 tokens %v", a)
	}
}
