package sampler

import (
	"math"
	"slices"
)

// refResult is what the reference computes for one step.
type refResult struct {
	processed []float32 // the row after processors and penalties
	greedy    int32     // its argmax, ties to the lowest id
	rawLP     []float64 // log-softmax of the raw row
	// For sampling: the final distribution (0 outside the survivors) and
	// its log (processed logprobs).
	probs  []float64
	procLP []float64
	// ambiguous: a min_p or top_p boundary fell within rounding error, so
	// float32 and float64 implementations may keep different sets.
	ambiguous bool
}

// reference is a literal, slow transcription of vLLM's sampler for one
// request: dense masks, full sorts, float64 softmax with math.Exp. It
// shares no code with the package beyond the Params type.
func reference(p Params, vocab int, eos, prompt, out []int32, logits []float32) refResult {
	var r refResult
	raw := slices.Clone(logits)
	r.rawLP = logSoftmax64(raw)
	x := slices.Clone(logits)
	ninf := float32(math.Inf(-1))
	if p.AllowedTokenIDs != nil {
		ok := make([]bool, vocab)
		for _, id := range p.AllowedTokenIDs {
			ok[id] = true
		}
		for i := range x {
			if !ok[i] {
				x[i] = ninf
			}
		}
	}
	for _, w := range p.BadWordIDs {
		pre := w[:len(w)-1]
		if len(pre) <= len(out) && slices.Equal(out[len(out)-len(pre):], pre) {
			x[w[len(w)-1]] = ninf
		}
	}
	for id, b := range p.LogitBias {
		x[id] += float32(b)
	}
	if len(out) < p.MinTokens {
		for _, id := range append(slices.Clone(p.StopTokenIDs), eos...) {
			x[id] = ninf
		}
	}
	for _, lp := range p.Processors {
		if err := lp.Process(x, out); err != nil {
			panic(err)
		}
	}
	count := make([]int, vocab)
	inPrompt := make([]bool, vocab)
	for _, id := range out {
		count[id]++
	}
	for _, id := range prompt {
		inPrompt[id] = true
	}
	rp := float32(p.RepetitionPenalty)
	for i := range x {
		if count[i] > 0 || inPrompt[i] {
			if x[i] > 0 {
				x[i] /= rp
			} else {
				x[i] *= rp
			}
		}
		x[i] -= float32(float32(p.FrequencyPenalty) * float32(count[i]))
		if count[i] > 0 {
			x[i] -= float32(p.PresencePenalty)
		}
	}
	r.processed = slices.Clone(x)
	r.greedy = int32(0)
	for i := range x {
		if x[i] > x[r.greedy] {
			r.greedy = int32(i)
		}
	}
	if p.Greedy() {
		r.procLP = logSoftmax64(x)
		return r
	}
	T := float32(p.effectiveTemperature())
	for i := range x {
		x[i] /= T
	}
	// min_p on the softmax
	if p.MinP > 0 {
		pr := softmax64(x)
		pmax := slices.Max(pr)
		for i := range x {
			lim := float64(float32(p.MinP)) * pmax
			if math.Abs(pr[i]-lim) < 1e-9*lim {
				r.ambiguous = true
			}
			if pr[i] < lim {
				x[i] = ninf
			}
		}
	}
	order := make([]int, vocab)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case x[a] > x[b]:
			return -1
		case x[a] < x[b]:
			return 1
		}
		return 0
	})
	if k := p.topK(vocab); k > 0 {
		for _, i := range order[k:] {
			x[i] = ninf
		}
	}
	if p.TopP < 1 {
		pr := softmax64(x)
		var cum float64
		for j, i := range order {
			if j > 0 && pr[i] > 0 && math.Abs(cum-float64(float32(p.TopP))) < 1e-9 {
				r.ambiguous = true
			}
			if j > 0 && !(cum < float64(float32(p.TopP))) {
				x[i] = ninf
			}
			cum += pr[i]
		}
	}
	r.probs = softmax64(x)
	r.procLP = logSoftmax64(x)
	return r
}

func softmax64(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, float64(v))
	}
	out := make([]float64, len(x))
	var s float64
	for i, v := range x {
		out[i] = math.Exp(float64(v) - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

func logSoftmax64(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) - m - math.Log(s)
	}
	return out
}
