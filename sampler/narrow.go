package sampler

import "math"

// shortList is the distribution over a short list: the processed logits of
// every token that can survive the truncations, sorted best first (the
// top-k, all allowed tokens, the candidates, or a nucleus). The truncations
// keep a prefix of it; the draw walks the survivors' cumulative
// probabilities best first. All the arithmetic is on this list, in float64
// with exp64, so the full-row and candidate paths give the same bits.
type shortList struct {
	s    *Sampler
	c    []cand
	n    int       // the survivors: c[:n]
	sc   []float32 // c's logits divided by the temperature
	e    []float64 // exp(sc - sc[0])
	smax float64
}

func (s *Sampler) shortList(c []cand) *shortList {
	l := &s.sl
	l.s, l.c, l.n = s, c, len(c)
	l.sc, l.e = l.sc[:0], l.e[:0]
	return l
}

func (l *shortList) temperature(t float32) {
	if len(l.c) == 0 {
		return
	}
	for _, c := range l.c {
		l.sc = append(l.sc, c.v/t) // vLLM divides the float32 logits
	}
	l.smax = float64(l.sc[0])
	for _, v := range l.sc {
		l.e = append(l.e, exp64(float64(v)-l.smax))
	}
}

// minP, top_k and top_p each keep a prefix of the sorted list, so min_p
// and top_k commute; top_p applies to what they left.
func (l *shortList) minP(p float32) {
	if p <= 0 {
		return
	}
	mp := float64(p)
	for i := 1; i < l.n; i++ {
		if l.e[i] < mp {
			l.n = i
			return
		}
	}
}

func (l *shortList) topK(k int) {
	if k > 0 {
		l.n = min(l.n, k)
	}
}

func (l *shortList) topP(p float32) {
	if p >= 1 {
		return
	}
	var z float64
	for _, v := range l.e[:l.n] {
		z += v
	}
	limit := float64(float64(p) * z)
	var cum float64
	for i := 1; i < l.n; i++ {
		cum += l.e[i-1]
		if !(cum < limit) {
			l.n = i
			return
		}
	}
}

// draw draws one uniform number from the request's stream.
func (l *shortList) draw(logpN int) (Result, error) {
	if l.n == 0 {
		return Result{}, ErrAllMasked
	}
	n, sc, e := l.n, l.sc, l.e
	var z float64
	for _, v := range e[:n] {
		z += v
	}
	target := float64(l.s.rng.float64() * z)
	pick := n - 1
	var cum float64
	for i, v := range e[:n] {
		cum += v
		if cum > target {
			pick = i
			break
		}
	}
	r := Result{ID: l.c[pick].id}
	if logpN >= 0 {
		lz := math.Log(z)
		lp := func(i int) float32 { return float32(float64(sc[i]) - l.smax - lz) }
		r.Logprob = lp(pick)
		for i := range n {
			if lp(i) >= r.Logprob {
				r.Rank++
			}
		}
		r.Top = make([]TokenLogprob, min(logpN, n))
		for i := range r.Top {
			r.Top[i] = TokenLogprob{ID: l.c[i].id, Logprob: lp(i)}
		}
	}
	return r, nil
}
