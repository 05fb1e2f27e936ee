package sampler

import (
	"math"
	"slices"
)

// cand is one token and its logit.
type cand struct {
	v  float32
	id int32
}

// better orders candidates by logit, descending, ties to the lowest id: the
// order of every top list here and of the GPU TopK op.
func better(a, b cand) bool { return a.v > b.v || (a.v == b.v && a.id < b.id) }

func cmpCand(a, b cand) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}

// topBuf keeps the k best candidates of a stream in one pass: a candidate
// enters while it beats the threshold (the k-th best so far); when the
// buffer fills, it is sorted and cut back to k, which raises the threshold.
// Sorting a few hundred entries a handful of times per row is all the
// sorting there is: never the full vocabulary.
type topBuf struct {
	k     int
	buf   []cand
	thr   float32 // once full, the k-th best value; -Inf before
	thrID int32   // and its id
	full  bool
}

func (t *topBuf) reset(k int) {
	t.k = k
	c := k + max(k, 256)
	if cap(t.buf) < c {
		t.buf = make([]cand, 0, c)
	}
	t.buf = t.buf[:0]
	t.thr, t.thrID, t.full = negInf, 0, false
}

// push adds c, which must beat the threshold.
func (t *topBuf) push(c cand) {
	t.buf = append(t.buf, c)
	if len(t.buf) == cap(t.buf) {
		t.cut()
	}
}

// offer adds c if it beats the k-th best so far; ids may come in any order.
// -Inf (masked) candidates never enter.
func (t *topBuf) offer(c cand) {
	if c.v == negInf || (t.full && !better(c, cand{t.thr, t.thrID})) {
		return
	}
	t.push(c)
}

// cut keeps the k best of the buffer (in no particular order) and raises
// the threshold to the worst of them.
func (t *topBuf) cut() {
	if len(t.buf) < t.k {
		return
	}
	selectBest(t.buf, t.k)
	t.buf = t.buf[:t.k]
	w := t.buf[0]
	for _, c := range t.buf[1:] {
		if better(w, c) {
			w = c
		}
	}
	t.thr, t.thrID, t.full = w.v, w.id, true
}

// sorted returns the best min(k, pushed) candidates, best first.
func (t *topBuf) sorted() []cand {
	t.cut()
	slices.SortFunc(t.buf, cmpCand)
	return t.buf
}

// selectBest moves the k best entries of c to c[:k] (quickselect with a
// median-of-three pivot; the order is total, so the set is unique).
func selectBest(c []cand, k int) {
	lo, hi := 0, len(c)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if better(c[mid], c[lo]) {
			c[mid], c[lo] = c[lo], c[mid]
		}
		if better(c[hi], c[lo]) {
			c[hi], c[lo] = c[lo], c[hi]
		}
		if better(c[hi], c[mid]) {
			c[hi], c[mid] = c[mid], c[hi]
		}
		p := c[mid] // the median of the three
		i, j := lo, hi
		for i <= j {
			for better(c[i], p) {
				i++
			}
			for better(p, c[j]) {
				j--
			}
			if i <= j {
				c[i], c[j] = c[j], c[i]
				i++
				j--
			}
		}
		switch {
		case k-1 <= j:
			hi = j
		case k-1 >= i:
			lo = i
		default:
			return
		}
	}
}

// scanResult is what one pass over a row learns.
type scanResult struct {
	top []cand  // the k best entries above -Inf, best first
	max float32 // the row maximum; -MaxFloat32 when every entry is -Inf
	sum float64 // Σ exp(x - max) over the row, when asked for
	ge  int     // entries >= the count threshold, when asked for
}

// scan makes one pass over row: it rejects NaN and +Inf, keeps the k best
// entries (k >= 1), and when withSum is set accumulates Σ exp(x - max) with
// a running maximum. -Inf entries are skipped by both. The threshold test
// relies on ids arriving in ascending order: an entry equal to the k-th
// best comes later, so it is worse.
func (t *topBuf) scan(row []float32, k int, withSum bool) (scanResult, error) {
	t.reset(k)
	if !withSum {
		return t.scanTop(row)
	}
	return t.scanSum(row, float32(math.Inf(1)))
}

// scanCount is scan with the sum, also counting the entries >= at (for a
// rank known before the pass).
func (t *topBuf) scanCount(row []float32, k int, at float32) (scanResult, error) {
	t.reset(k)
	return t.scanSum(row, at)
}

// slow handles an entry at or above the threshold (or NaN).
func (t *topBuf) slow(x float32, i int) error {
	if x != x || x > math.MaxFloat32 {
		return &LogitError{Index: i, Value: x, Stage: "model"}
	}
	t.push(cand{x, int32(i)})
	return nil
}

func (t *topBuf) scanTop(row []float32) (scanResult, error) {
	for i, x := range row {
		if !(x <= t.thr) {
			if err := t.slow(x, i); err != nil {
				return scanResult{}, err
			}
		}
	}
	top := t.sorted()
	r := scanResult{top: top, max: -math.MaxFloat32}
	if len(top) > 0 {
		r.max = top[0].v
	}
	return r, nil
}

func (t *topBuf) scanSum(row []float32, at float32) (scanResult, error) {
	m := float32(-math.MaxFloat32) // running maximum
	var s0, s1, s2, s3 float64     // Σ exp(x - m), four chains for speed
	ge := 0
	i := 0
	for ; i+4 <= len(row); i += 4 {
		r := row[i : i+4 : i+4]
		x0, x1, x2, x3 := r[0], r[1], r[2], r[3]
		if !(x0 <= t.thr && x1 <= t.thr && x2 <= t.thr && x3 <= t.thr) {
			for j, x := range r {
				if !(x <= t.thr) {
					if err := t.slow(x, i+j); err != nil {
						return scanResult{}, err
					}
					if x > m { // rescale the sums to the new maximum
						f := exp64(float64(m) - float64(x))
						s0, s1, s2, s3 = float64(s0*f), float64(s1*f), float64(s2*f), float64(s3*f)
						m = x
					}
				}
			}
		}
		mm := float64(m)
		s0 += expSum(float64(x0) - mm)
		s1 += expSum(float64(x1) - mm)
		s2 += expSum(float64(x2) - mm)
		s3 += expSum(float64(x3) - mm)
		if !(x0 < at && x1 < at && x2 < at && x3 < at) {
			for _, x := range r {
				if x >= at {
					ge++
				}
			}
		}
	}
	for ; i < len(row); i++ {
		x := row[i]
		if !(x <= t.thr) {
			if err := t.slow(x, i); err != nil {
				return scanResult{}, err
			}
			if x > m {
				f := exp64(float64(m) - float64(x))
				s0, s1, s2, s3 = float64(s0*f), float64(s1*f), float64(s2*f), float64(s3*f)
				m = x
			}
		}
		s0 += expSum(float64(x) - float64(m))
		if x >= at {
			ge++
		}
	}
	top := t.sorted()
	return scanResult{top: top, max: m, sum: (s0 + s1) + (s2 + s3), ge: ge}, nil
}
