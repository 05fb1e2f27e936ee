package sampler

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestScan checks the one-pass top-k and sum against a full sort, with
// ties, -Inf entries and orders that make the buffer cut often.
func TestScan(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for trial := range 300 {
		n := 1 + r.IntN(3000)
		row := make([]float32, n)
		for i := range row {
			switch r.IntN(10) {
			case 0:
				row[i] = float32(math.Inf(-1))
			case 1:
				row[i] = float32(r.IntN(3)) // ties
			default:
				row[i] = float32(r.NormFloat64() * 3)
			}
		}
		if trial%3 == 0 {
			slices.Sort(row) // ascending: every entry enters the buffer
		}
		k := 1 + r.IntN(600)
		var tb topBuf
		res, err := tb.scan(row, k, true)
		if err != nil {
			t.Fatal(err)
		}
		all := make([]cand, 0, n)
		var m float64 = math.Inf(-1)
		for i, v := range row {
			if !math.IsInf(float64(v), -1) {
				all = append(all, cand{v, int32(i)})
				m = math.Max(m, float64(v))
			}
		}
		slices.SortFunc(all, cmpCand)
		want := all[:min(k, len(all))]
		if !slices.Equal(res.top, want) {
			t.Fatalf("trial %d (n %d, k %d): top %v, want %v", trial, n, k, res.top, want)
		}
		if len(all) == 0 {
			continue
		}
		var sum float64
		for _, c := range all {
			sum += math.Exp(float64(c.v) - m)
		}
		if float64(res.max) != m || math.Abs(res.sum/sum-1) > 1e-7 {
			t.Fatalf("trial %d: max %v sum %v, want %v %v", trial, res.max, res.sum, m, sum)
		}
	}
}

func TestExp(t *testing.T) {
	worst64, worstSum := 0.0, 0.0
	for x := -708.0; x <= 0; x += 0.000731 {
		w := math.Exp(x)
		worst64 = math.Max(worst64, math.Abs(exp64(x)-w)/w)
		if x >= -87 {
			worstSum = math.Max(worstSum, math.Abs(expSum(x)-w)/w)
		}
	}
	if worst64 > 1e-15 || worstSum > 3e-8 {
		t.Errorf("relative errors: exp64 %g, expSum %g", worst64, worstSum)
	}
	if exp64(math.Inf(-1)) != 0 || exp64(-800) != 0 || !math.IsNaN(exp64(math.NaN())) || exp64(0) != 1 {
		t.Error("exp64 special cases")
	}
	if e := expSum(math.Inf(-1)); e > 2e-38 {
		t.Errorf("expSum(-Inf) = %g", e)
	}
}
