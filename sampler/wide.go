package sampler

import (
	"math"
	"slices"
)

const (
	wideBlock = 1024
	// wideTop is how many of the best logits the scan keeps for top_p
	// without top_k: the nucleus is usually among them.
	wideTop = 256
)

// wideWeights are the unnormalised probabilities of the full-row path:
// w(x) = exp(x/T - max/T), or 0 below min_p (and below 1e-37, where the
// float32-precision exponential stops).
type wideWeights struct {
	invT, smax, cut float64
}

func (w wideWeights) of(x float32) float64 {
	e := expSum(float64(float64(x)*w.invT) - w.smax)
	if e < w.cut {
		return 0
	}
	return e
}

// wholeRow is the distribution over the whole processed row, when no
// top_k bounds the candidates (temperature alone, min_p, top_p). top holds
// the row's best entries, sorted (at least one; at least the top-n for
// processed logprobs; wideTop with top_p). Temperature and min_p define the
// weights; their one exponential per vocabulary entry is taken in a single
// pass (mass), summed per block of 1024, when top_p or the draw needs the
// total; the draw then finds its block and recomputes only that block's
// weights.
type wholeRow struct {
	s      *Sampler
	row    []float32
	top    []cand
	t      float32
	w      wideWeights
	blocks []float64 // after mass: the weights summed per block
	z      float64   // and in all
	inNuc  bool      // top_p chose a nucleus: s.sl
}

func (d *wholeRow) temperature(t float32) {
	d.t = t
	d.w.invT = 1 / float64(t)
	d.w.smax = float64(float64(d.top[0].v) * d.w.invT)
}

func (d *wholeRow) minP(p float32) { d.w.cut = max(float64(p), 1e-37) }

// topK has nothing to do: with top_k the distribution is a short list.
func (d *wholeRow) topK(int) {}

func (d *wholeRow) topP(p float32) {
	if p < 1 {
		d.mass()
		d.nucleus(p)
	}
}

// mass sums the weights per block.
func (d *wholeRow) mass() {
	if d.blocks != nil {
		return
	}
	row, w := d.row, d.w
	nb := (len(row) + wideBlock - 1) / wideBlock
	if len(d.s.blocks) < nb {
		d.s.blocks = make([]float64, nb)
	}
	blocks := d.s.blocks[:nb]
	var z float64
	for b := range blocks {
		var bs float64
		for _, x := range row[b*wideBlock : min((b+1)*wideBlock, len(row))] {
			e := expSum(float64(float64(x)*w.invT) - w.smax)
			if e >= w.cut {
				bs += e
			}
		}
		blocks[b] = bs
		z += bs
	}
	d.blocks, d.z = blocks, z
}

// draw draws one uniform number from the request's stream: from the
// nucleus if top_p chose one, else over the whole row.
func (d *wholeRow) draw(logpN int) (Result, error) {
	if d.inNuc {
		return d.s.sl.draw(logpN)
	}
	d.mass()
	row, w, blocks, z := d.row, d.w, d.blocks, d.z
	nb := len(blocks)
	target := float64(d.s.rng.float64() * z)
	pick := -1
	var cum float64
	for b, bs := range blocks {
		if cum+bs <= target && b < nb-1 {
			cum += bs
			continue
		}
		lo := b * wideBlock
		for i, x := range row[lo:min(lo+wideBlock, len(row))] {
			if e := w.of(x); e > 0 {
				pick = lo + i
				cum += e
				if cum > target {
					break
				}
			}
		}
		if pick >= 0 {
			break
		}
	}
	if pick < 0 { // rounding ran past the last block's survivors
		for i := len(row) - 1; i >= 0; i-- {
			if w.of(row[i]) > 0 {
				pick = i
				break
			}
		}
	}
	r := Result{ID: int32(pick)}
	if logpN >= 0 {
		lz := math.Log(z)
		lp := func(x float32) float32 { return float32(float64(float64(x)*w.invT) - w.smax - lz) }
		r.Logprob = lp(row[pick])
		// Every token at least as likely as the pick survived min_p too.
		x := row[pick]
		for _, v := range row {
			if v >= x {
				r.Rank++
			}
		}
		for _, c := range d.top {
			if len(r.Top) == logpN || w.of(c.v) == 0 {
				break
			}
			r.Top = append(r.Top, TokenLogprob{ID: c.id, Logprob: lp(c.v)})
		}
	}
	return r, nil
}

// nucleus applies top_p over the whole row: it keeps the best tokens
// while the mass before them is below p·z. Usually the nucleus ends inside
// top; otherwise a histogram of the weights by eighths of an octave finds
// how deep it reaches, and only the tokens above that depth are sorted. The
// nucleus is short: it is then sampled as a short list (s.sl), min_p and
// top_p already applied.
func (d *wholeRow) nucleus(p float32) {
	s, row, w := d.s, d.row, d.w
	limit := float64(float64(p) * d.z)
	c, keep, ok := nucleusIn(d.top, w, limit)
	if !ok {
		const one = 0x3F800000
		var mass [1 << 10]float64
		for _, x := range row {
			if e := float32(w.of(x)); e > 0 {
				mass[(one-math.Float32bits(e))>>20] += float64(e)
			}
		}
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
		all := s.nuc[:0]
		for i, x := range row {
			if e := float32(w.of(x)); e > 0 && math.Float32bits(e) > floor {
				all = append(all, cand{x, int32(i)})
			}
		}
		slices.SortFunc(all, cmpCand)
		s.nuc = all
		c, keep, _ = nucleusIn(all, w, limit)
	}
	s.shortList(c[:keep]).temperature(d.t)
	d.inNuc = true
}

// nucleusIn finds the nucleus within a sorted list: the prefix kept, and
// whether the list was long enough to decide.
func nucleusIn(list []cand, w wideWeights, limit float64) ([]cand, int, bool) {
	var cum float64
	for i, c := range list {
		e := w.of(c.v)
		if e == 0 { // min_p ends the survivors here
			return list, max(i, 1), true
		}
		if i > 0 && !(cum < limit) {
			return list, i, true
		}
		cum += e
	}
	return list, len(list), len(list) < wideTop
}
