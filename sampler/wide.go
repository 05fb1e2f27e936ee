package sampler

import (
	"math"
	"slices"
)

const wideBlock = 1024

// wide samples from the whole processed row when no top_k bounds the
// candidates (temperature alone, min_p, top_p). top holds the row's best
// entries (at least one, and the top-n for processed logprobs). It costs
// one exponential per token of the vocabulary, plus two cheap passes for
// top_p: a histogram of the probabilities by octave finds how deep the
// nucleus reaches, and only the tokens above that depth are sorted.
func (s *Sampler) wide(row []float32, top []cand, logpN int) (Result, error) {
	if len(top) == 0 {
		return Result{}, ErrAllMasked
	}
	if len(s.wideE) < len(row) {
		s.wideE = make([]float32, len(row))
		s.blocks = make([]float64, (len(row)+wideBlock-1)/wideBlock)
	}
	E := s.wideE[:len(row)]
	blocks := s.blocks[:(len(row)+wideBlock-1)/wideBlock]
	T := s.temp
	smax := float64(top[0].v / T)
	// Tokens below 1e-37 of the best one's probability are dropped (the
	// float32 exponential underflows there anyway), as are those min_p cuts.
	cut := float32(max(s.minP, 1e-37))
	var z float64
	for b := range blocks {
		lo := b * wideBlock
		hi := min(lo+wideBlock, len(row))
		var bs float64
		for i := lo; i < hi; i++ {
			e := float32(expSum(float64(row[i]/T) - smax))
			if e < cut {
				e = 0
			}
			E[i] = e
			bs += float64(e)
		}
		blocks[b] = bs
		z += bs
	}
	if s.topP < 1 {
		return s.nucleus(row, E, z, logpN)
	}
	target := float64(s.rng.float64() * z)
	pick := -1
	var cum float64
	for b, bs := range blocks {
		if cum+bs <= target {
			cum += bs
			continue
		}
		lo := b * wideBlock
		for i := lo; i < min(lo+wideBlock, len(row)); i++ {
			if E[i] == 0 {
				continue
			}
			pick = i
			cum += float64(E[i])
			if cum > target {
				break
			}
		}
		break
	}
	if pick < 0 { // rounding put the target past the end: take the last survivor
		for i := len(E) - 1; i >= 0; i-- {
			if E[i] > 0 {
				pick = i
				break
			}
		}
	}
	r := Result{ID: int32(pick)}
	if logpN >= 0 {
		lz := math.Log(z)
		lp := func(x float32) float32 { return float32(float64(x/T) - smax - lz) }
		r.Logprob = lp(row[pick])
		// Every token at least as likely as the pick survived min_p too.
		x := row[pick]
		for _, v := range row {
			if v >= x {
				r.Rank++
			}
		}
		for _, c := range top {
			if len(r.Top) == logpN || E[c.id] == 0 {
				break
			}
			r.Top = append(r.Top, TokenLogprob{ID: c.id, Logprob: lp(c.v)})
		}
	}
	return r, nil
}

// nucleus applies top_p over the whole row: E holds the unnormalised
// probabilities (min_p applied) and z their sum.
func (s *Sampler) nucleus(row []float32, E []float32, z float64, logpN int) (Result, error) {
	// Bucket b holds probabilities in (2^-(b+1)/8, 2^-b/8] relative to the
	// best token: 1/8 of an octave, from the float32 bits.
	const one = 0x3F800000
	var mass [1 << 10]float64
	for _, e := range E {
		if e > 0 {
			mass[(one-math.Float32bits(e))>>20] += float64(e)
		}
	}
	limit := float64(float64(s.topP) * z)
	deep := len(mass) - 1
	var cum float64
	for b, m := range mass {
		cum += m
		if cum >= limit {
			deep = min(b+1, len(mass)-1) // one bucket of slack for rounding
			break
		}
	}
	floor := uint32(one - (deep+1)<<20)
	c := s.nuc[:0]
	for i, e := range E {
		if e > 0 && math.Float32bits(e) > floor {
			c = append(c, cand{row[i], int32(i)})
		}
	}
	slices.SortFunc(c, cmpCand)
	keep := len(c)
	cum = 0
	for i := 1; i < len(c); i++ {
		cum += float64(E[c[i-1].id])
		if !(cum < limit) {
			keep = i
			break
		}
	}
	s.nuc = c
	// The nucleus is short: sample it like a top-k list, min_p and top_p
	// already applied.
	return s.narrow(c[:keep], narrowOpts{logpN: logpN})
}
