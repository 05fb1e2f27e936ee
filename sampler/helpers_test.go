package sampler

import (
	"math"
	"testing"
)

var inf = float32(math.Inf(1))

func intp(n int) *int             { return &n }
func i64p(n int64) *int64         { return &n }
func f32s(v ...float32) []float32 { return v }

// newSampler builds a Sampler and feeds it out as already generated.
func newSampler(t testing.TB, p Params, vocab int, eos, prompt, out []int32) *Sampler {
	t.Helper()
	s, err := New(p, vocab, eos, prompt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, id := range out {
		if err := s.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// params returns DefaultParams changed by f, with a fixed seed.
func params(f func(*Params)) Params {
	p := DefaultParams()
	p.Seed = i64p(1)
	p.MaxTokens = 0
	if f != nil {
		f(&p)
	}
	return p
}

// logSoftmaxOf is the exact log-softmax of xs (float64), for expected values.
func logSoftmaxOf(xs ...float64) []float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	var s float64
	for _, x := range xs {
		s += math.Exp(x - m)
	}
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x - m - math.Log(s)
	}
	return out
}

// near compares a float32 result with an exact value, relative to the
// value's magnitude above 1 (float32 logprobs of -100 have ulps of 8e-6).
func near(a float32, b float64, tol float64) bool {
	return math.Abs(float64(a)-b) <= tol*math.Max(1, math.Abs(b))
}

// noop is a custom processor that changes nothing: it forces the dense path.
type noop struct{}

func (noop) Process([]float32, []int32) error { return nil }
