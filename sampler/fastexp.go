package sampler

import "math"

// Both exponentials below are written out in Go, with every product rounded
// by an explicit conversion, so that they give the same bits on every
// GOARCH (no fused multiply-add, no assembly math.Exp). Sampling decisions
// depend only on them, which is what makes a seed reproducible natively and
// in wasm.

// exp2Table64[j] = 2^(j/64).
var exp2Table64 [64]float64

func init() {
	for j := range exp2Table64 {
		exp2Table64[j] = math.Exp2(float64(j) / 64)
	}
}

const (
	expMagic   = 0x1.8p52        // adding it rounds a float64 below 2^51 to an integer
	expScale   = 64 / math.Ln2   // 64·log2(e)
	expLn2o64H = 0x1.62e42fefp-7 // ln2/64, high part: n·expLn2o64H is exact for |n| < 2^20
	expLn2o64L = math.Ln2/64 - expLn2o64H
	expMin     = -708.0 // below this exp underflows to (sub)normal territory; we return 0
	expMin32   = -87.0  // a term this small is below 1e-37 of the largest one
)

// exp64 returns e^x for x <= 709 with a relative error below 1e-15, and 0 for
// x < -708 (and for x = -Inf). NaN gives NaN.
func exp64(x float64) float64 {
	if !(x >= expMin) {
		if x != x {
			return x
		}
		return 0
	}
	t := float64(x*expScale) + expMagic
	n := int64(math.Float64bits(t)) - int64(math.Float64bits(expMagic))
	t -= expMagic
	r := float64(x-float64(t*expLn2o64H)) - float64(t*expLn2o64L)
	// e^r for |r| <= ln2/128: degree-5 Taylor, error below 2e-16.
	p := float64(r * (1.0 / 120))
	p = float64(r * (1.0/24 + p))
	p = float64(r * (1.0/6 + p))
	p = float64(r * (0.5 + p))
	p = float64(r * (1 + p))
	b := math.Float64bits(exp2Table64[n&63]) + uint64(n>>6)<<52
	return math.Float64frombits(b) + float64(math.Float64frombits(b)*p)
}

// expSum returns e^d for -87 <= d <= 0 with a relative error below 3e-8;
// below -87 (including -Inf) it returns e^-87 ≈ 1.6e-38, which no sum over a
// vocabulary can notice. It is the cheap exponential of the full-row sums,
// small enough to inline, where each term only needs float32 precision.
func expSum(d float64) float64 {
	if !(d >= expMin32) {
		d = expMin32
	}
	// Rounding against expSumMagic leaves n = round(d·64/ln2) + 8192 >= 0
	// in the low bits: n mod 64 picks the table entry, n/64 - 128 is added
	// to the exponent (the -128 is folded into the table).
	t := float64(d*expScale) + expSumMagic
	n := math.Float64bits(t)
	r := d - float64((t-expSumMagic)*(math.Ln2/64))
	p := 1 + float64(r*float64(1+float64(r*0.5)))
	return math.Float64frombits(expSumTable[n&63]+(n>>6)<<52) * p
}

const expSumMagic = expMagic + 8192

// expSumTable[j] = the bits of 2^(j/64), less 128 in the exponent field.
var expSumTable [64]uint64

func init() {
	for j := range expSumTable {
		expSumTable[j] = math.Float64bits(exp2Table64[j]) - 128<<52
	}
}
