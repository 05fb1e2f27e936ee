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

// slow handles an entry above the threshold, or NaN. Keeping it out of
// line keeps the scan loop as tight as an argmax's.
func (t *topBuf) slow(x float32, i int) error {
	if x != x || x > math.MaxFloat32 {
		return &LogitError{Index: i, Value: x, Stage: "model"}
	}
	t.push(cand{x, int32(i)})
	return nil
}

// scanResult is what a scan of a row learns.
type scanResult struct {
	top []cand  // the k best entries above -Inf, best first
	max float32 // the row maximum; -MaxFloat32 when every entry is -Inf
	sum float64 // Σ exp(x - max) over the row, when asked for
	ge  int     // entries >= the count threshold, when asked for
}

// scan rejects NaN and +Inf, keeps the k best entries (k >= 1) and, when
// withSum is set, sums exp(x - max). The top-k pass costs about an argmax;
// the sum is a second pass at a known maximum, which is cheaper than one
// fused pass with a running maximum.
func (t *topBuf) scan(row []float32, k int, withSum bool) (scanResult, error) {
	if !withSum {
		return t.scanCount(row, k, float32(math.NaN()))
	}
	return t.scanCount(row, k, float32(math.Inf(1)))
}

// scanCount is scan with the sum, also counting the entries >= at (for a
// rank known before the pass). at = NaN skips the sum and the count.
func (t *topBuf) scanCount(row []float32, k int, at float32) (scanResult, error) {
	t.reset(k)
	thr := t.thr // in a register: it changes only in the slow path
	// The threshold test relies on ids arriving in ascending order: an
	// entry equal to the k-th best comes later, so it is worse. NaN fails
	// it too. Four entries at a time, then one by one when one fails.
	i := 0
	for ; i+4 <= len(row); i += 4 {
		q := row[i : i+4 : i+4]
		if q[0] <= thr && q[1] <= thr && q[2] <= thr && q[3] <= thr {
			continue
		}
		for j, x := range q {
			if !(x <= thr) {
				if err := t.slow(x, i+j); err != nil {
					return scanResult{}, err
				}
				thr = t.thr
			}
		}
	}
	for ; i < len(row); i++ {
		if x := row[i]; !(x <= thr) {
			if err := t.slow(x, i); err != nil {
				return scanResult{}, err
			}
			thr = t.thr
		}
	}
	r := scanResult{top: t.sorted(), max: -math.MaxFloat32}
	if len(r.top) > 0 {
		r.max = r.top[0].v
	}
	if at == at {
		r.sum = sumExp(row, r.max)
		if at <= math.MaxFloat32 {
			r.ge = countGE(row, at)
		}
	}
	return r, nil
}

// sumExp returns Σ exp(x - m) over row (m >= every entry). Four
// independent sums keep the pipeline full; -Inf entries add e^-87 ≈ 1.6e-38
// each, nothing a vocabulary can notice.
func sumExp(row []float32, m float32) float64 {
	var s0, s1, s2, s3 float64
	mm := float64(m)
	i := 0
	for ; i+4 <= len(row); i += 4 {
		r := row[i : i+4 : i+4]
		s0 += expSum(float64(r[0]) - mm)
		s1 += expSum(float64(r[1]) - mm)
		s2 += expSum(float64(r[2]) - mm)
		s3 += expSum(float64(r[3]) - mm)
	}
	for _, x := range row[i:] {
		s0 += expSum(float64(x) - mm)
	}
	return (s0 + s1) + (s2 + s3)
}

// countGE counts the entries >= at.
func countGE(row []float32, at float32) int {
	n := 0
	for _, x := range row {
		if x >= at {
			n++
		}
	}
	return n
}
