package sampler

import "math"

// TokenLogprob is one entry of a top-logprobs list.
type TokenLogprob struct {
	ID      int32   `json:"id"`
	Logprob float32 `json:"logprob"`
}

// Result is one sampled token.
type Result struct {
	ID int32
	// Logprob is the sampled token's log-probability in the request's
	// logprobs mode, and Rank is the number of tokens whose logprob is at
	// least as high (1 for the most likely), as vLLM counts it. Both are
	// zero when Params.Logprobs is nil.
	Logprob float32
	Rank    int
	// Top holds the Params.Logprobs most likely tokens, best first (ties to
	// the lowest id). Tokens with a -Inf logprob are left out, so in
	// processed mode the list can be shorter than asked.
	Top []TokenLogprob
}

// logSoftmax describes a log-softmax over some universe: logprob(x) =
// x - max - log(sum), with sum = Σ exp(x - max).
type logSoftmax struct {
	max float64
	lse float64 // max + log(sum)
}

func newLogSoftmax(max float32, sum float64) logSoftmax {
	return logSoftmax{max: float64(max), lse: float64(max) + math.Log(sum)}
}

func (l logSoftmax) of(x float32) float32 { return float32(float64(x) - l.lse) }

// combine folds extra terms into a scan's (max, sum): the raw or processed
// values of the edited ids, which the scan did not see.
func combine(max float32, sum float64, extra []float32) (float32, float64) {
	m := max
	for _, v := range extra {
		if v > m {
			m = v
		}
	}
	s := float64(sum * exp64(float64(max)-float64(m)))
	for _, v := range extra {
		s += exp64(float64(v) - float64(m))
	}
	return m, s
}

// topLogprobs returns up to n entries of a sorted list as logprobs.
func topLogprobs(list []cand, n int, ls logSoftmax) []TokenLogprob {
	n = min(n, len(list))
	out := make([]TokenLogprob, n)
	for i := range out {
		out[i] = TokenLogprob{ID: list[i].id, Logprob: ls.of(list[i].v)}
	}
	return out
}
