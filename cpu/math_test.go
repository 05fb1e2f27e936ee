package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// expSpecials are expf's edge cases: zeros, the ends of its range and
// just past them, infinities and NaN.
func expSpecials() []float32 {
	inf := float32(math.Inf(1))
	return []float32{0, float32(math.Copysign(0, -1)), 1e-9, -1e-9, 0.5, -0.5, 1, -1, 0.34657359, -0.34657359,
		-20, -87.3, -87.33654, -87.34, -103.9, -200, 88, 88.3, 88.72, 88.73, 100, -inf, inf, float32(math.NaN())}
}

func isNaN32(x float32) bool { return x != x }

// TestExpf checks expf against float64 math.Exp: within 2 ulp of the
// correctly rounded value over its normal range (a dense sweep and random
// points), exactly 1 at 0, 0 below ln(2^-126) (a softmax or SiLU needs no
// subnormals), +Inf above ln(FLT_MAX), and NaN for NaN.
func TestExpf(t *testing.T) {
	ulps := func(got float32, want float64) float64 {
		w := float32(want)
		ulp := float64(math.Nextafter32(w, float32(math.Inf(1))) - w)
		return math.Abs(float64(got)-want) / ulp
	}
	var worst float64
	var worstX float32
	check := func(x float32) {
		got, want := expf(x), math.Exp(float64(x))
		switch {
		case isNaN32(x):
			if !isNaN32(got) {
				t.Fatalf("expf(NaN) = %v", got)
			}
		case x < -87.33654475:
			if got != 0 {
				t.Fatalf("expf(%v) = %v, want 0", x, got)
			}
		case x > 88.72283935:
			if !math.IsInf(float64(got), 1) {
				t.Fatalf("expf(%v) = %v, want +Inf", x, got)
			}
		default:
			if u := ulps(got, want); u > worst {
				worst, worstX = u, x
			}
		}
	}
	for _, x := range expSpecials() {
		check(x)
	}
	for x := float32(-87.3); x < 88.7; x += 0.00173 {
		check(x)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		check(float32(rng.Float64()*176 - 87.3))
		check(float32(rng.NormFloat64()))
	}
	t.Logf("largest error: %.2f ulp at %v", worst, worstX)
	if worst > 2 {
		t.Errorf("expf(%v) is %.2f ulp from e^x, want at most 2", worstX, worst)
	}
	if got := expf(0); got != 1 {
		t.Errorf("expf(0) = %v, want 1", got)
	}
}

// TestSiluMul: siluMul (expf's SiLU) is within 4e-7 relative (plus a tiny
// absolute floor) of the float64 SiLU, on ordinary and extreme inputs.
func TestSiluMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const T, F = 3, 37
	gu := make([]float32, T*2*F)
	for i := range gu {
		gu[i] = float32(rng.NormFloat64() * 6)
	}
	gu[0], gu[1], gu[2], gu[3] = 100, -100, 0, -90
	out := make([]float32, T*F)
	siluMul(out, gu, T, F)
	for tk := range T {
		for i := range F {
			g, u := float64(gu[tk*2*F+i]), float64(gu[tk*2*F+F+i])
			want := g / (1 + math.Exp(-g)) * u
			if got := float64(out[tk*F+i]); math.Abs(got-want) > 4e-7*math.Abs(want)+1e-30 {
				t.Fatalf("[%d, %d] silu(%v)·%v = %v, want %v", tk, i, g, u, got, want)
			}
		}
	}
}
