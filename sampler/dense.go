package sampler

import "fmt"

// dense is the whole row, edited in place as vLLM does: the representation
// for custom processors, which may change any logit.
type dense struct {
	s   *Sampler
	row []float32
	ed  *editor
	res scanResult // best's scan of the processed row
	raw rawStats   // of s.rawCopy, the row as the model gave it
}

func (s *Sampler) dense(row []float32) *dense {
	s.dn = dense{s: s, row: row}
	return &s.dn
}

// keepRaw takes the raw statistics and a copy of the row before the steps
// overwrite it.
func (x *dense) keepRaw() error {
	s := x.s
	k := max(s.logpN, 1)
	res, err := s.tb.scan(x.row, k, true)
	if err != nil {
		return err
	}
	s.rawTop = append(s.rawTop[:0], res.top...)
	x.raw = rawStats{ls: newLogSoftmax(res.max, res.sum), top: s.rawTop, full: len(res.top) == k}
	s.rawCopy = append(s.rawCopy[:0], x.row...)
	return nil
}

func (x *dense) allow([]int32) {
	s := x.s
	if s.allowedMask == nil {
		s.allowedMask = make([]bool, s.vocab)
		for _, id := range s.ps.allowed {
			s.allowedMask[id] = true
		}
	}
	for i, ok := range s.allowedMask {
		if !ok {
			x.row[i] = negInf
		}
	}
}

func (x *dense) touch(ed *editor) { x.ed = ed }

func (x *dense) ban(ids []int32) {
	for _, id := range ids {
		x.row[id] = negInf
	}
}

func (x *dense) bias(ids []int32, vals []float32) {
	for i, id := range ids {
		x.row[id] += vals[i]
	}
}

func (x *dense) custom(lps []LogitsProcessor, out []int32) error {
	for i, lp := range lps {
		if err := lp.Process(x.row, out); err != nil {
			return fmt.Errorf("sampler: logits processor %d: %w", i, err)
		}
	}
	return nil
}

func (x *dense) penalize(ps *procState, h *history) {
	for _, id := range x.ed.ids {
		x.row[id] = ps.pen(id, x.row[id], h)
	}
}

func (x *dense) best(k int) ([]cand, error) {
	var err error
	x.res, err = x.s.tb.scan(x.row, k, x.s.needProcSum())
	if err != nil {
		if le, ok := err.(*LogitError); ok {
			le.Stage = "after the logits processors"
		}
		return nil, err
	}
	return x.res.top, nil
}

func (x *dense) logSoftmax() logSoftmax { return newLogSoftmax(x.res.max, x.res.sum) }

func (x *dense) count(v float32) int { return countGE(x.row, v) }

// whole is the row, unless allowed_token_ids made the allowed ids the
// whole distribution.
func (x *dense) whole() []float32 {
	if x.s.ps.allowed != nil {
		return nil
	}
	return x.row
}

func (x *dense) rawLogprobs(r Result) (Result, error) {
	raw := x.s.rawCopy
	return x.s.finishRaw(r, &x.raw, raw[r.ID], func(v float32) int { return countGE(raw, v) }), nil
}
