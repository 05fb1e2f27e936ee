package sampler

import "math"

// narrowOpts says which truncations narrow still has to apply.
type narrowOpts struct {
	topK  int  // 0: none
	minP  bool // apply min_p
	topP  bool // apply top_p
	logpN int  // processed logprobs: top-n, or -1 for none
}

// narrow samples from cands, the processed logits of every token that can
// survive the truncations, sorted best first (the top-k, or a nucleus, or
// all allowed tokens). It applies, in vLLM's order, temperature, min_p,
// top_k and top_p, then draws one uniform number and walks the survivors'
// cumulative probabilities best first. All the arithmetic is on this short
// list, in float64 with exp64, so the full-row and candidate paths give the
// same bits.
func (s *Sampler) narrow(cands []cand, o narrowOpts) (Result, error) {
	if len(cands) == 0 {
		return Result{}, ErrAllMasked
	}
	n := len(cands)
	if o.topK > 0 {
		// min_p keeps a prefix of this list and top_k keeps a prefix, so
		// their order does not matter.
		n = min(n, o.topK)
	}
	sc := s.sc[:0]
	e := s.e[:0]
	for _, c := range cands[:n] {
		sc = append(sc, c.v/s.temp) // vLLM divides the float32 logits
	}
	smax := float64(sc[0])
	for _, v := range sc {
		e = append(e, exp64(float64(v)-smax))
	}
	s.sc, s.e = sc, e
	if o.minP {
		mp := float64(s.minP)
		for i := 1; i < n; i++ {
			if e[i] < mp {
				n = i
				break
			}
		}
	}
	if o.topP {
		var z float64
		for _, v := range e[:n] {
			z += v
		}
		limit := float64(float64(s.topP) * z)
		var cum float64
		for i := 1; i < n; i++ {
			cum += e[i-1]
			if !(cum < limit) {
				n = i
				break
			}
		}
	}
	var z float64
	for _, v := range e[:n] {
		z += v
	}
	target := float64(s.rng.float64() * z)
	pick := n - 1
	var cum float64
	for i, v := range e[:n] {
		cum += v
		if cum > target {
			pick = i
			break
		}
	}
	r := Result{ID: cands[pick].id}
	if o.logpN >= 0 {
		lz := math.Log(z)
		lp := func(i int) float32 { return float32(float64(sc[i]) - smax - lz) }
		r.Logprob = lp(pick)
		for i := range n {
			if lp(i) >= r.Logprob {
				r.Rank++
			}
		}
		r.Top = make([]TokenLogprob, min(o.logpN, n))
		for i := range r.Top {
			r.Top[i] = TokenLogprob{ID: cands[i].id, Logprob: lp(i)}
		}
	}
	return r, nil
}
