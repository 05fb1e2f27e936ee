package sampler

import (
	"fmt"
	"slices"
)

// argmax is greedy decoding with nothing to apply: the scan with k = 1,
// ties to the lowest id, NaN and +Inf rejected at no extra cost.
func (s *Sampler) argmax(row []float32) (int32, error) {
	res, err := s.tb.scan(row, 1, false)
	if err != nil {
		return 0, err
	}
	if len(res.top) == 0 {
		return 0, ErrAllMasked
	}
	return res.top[0].id, nil
}

// countAdjusted counts the entries >= v of a row whose edited ids hold
// something else than the universe's value: the row's count, corrected by
// each edit's value in the universe (raw or processed).
func countAdjusted(row []float32, v float32, edits []edit, useProc bool) int {
	n := countGE(row, v)
	for _, e := range edits {
		if row[e.id] >= v {
			n--
		}
		u := e.raw
		if useProc {
			u = e.proc
		}
		if u >= v {
			n++
		}
	}
	return n
}

func countRow(row []float32, v float32) int { return countAdjusted(row, v, nil, false) }

// rankOf is a token's rank in a sorted top list, falling back to a count
// over the universe when ties may run past the list's end.
func rankOf(top []cand, cut bool, v float32, count func(float32) int) int {
	if cut && !(v > top[len(top)-1].v) {
		return count(v)
	}
	n := 0
	for _, c := range top {
		if c.v >= v {
			n++
		}
	}
	return n
}

func (s *Sampler) procLogpN() int {
	if s.logpN >= 0 && !s.raw {
		return s.logpN
	}
	return -1
}

// decide takes the greedy pick or samples from the processed candidates
// (proc: the best kProc processed logits, sorted), falling back to the wide
// path over row (the materialised processed row, built by widen) when no
// top_k bounds the candidates. A nil widen means proc is the whole
// universe (allowed_token_ids) or a verified candidate set.
func (s *Sampler) decide(proc []cand, procLS func() logSoftmax, procCount func(float32) int, widen func() []float32) (Result, error) {
	if s.greedy {
		if len(proc) == 0 {
			return Result{}, ErrAllMasked
		}
		r := Result{ID: proc[0].id}
		if s.needProcSum() {
			ls := procLS()
			r.Logprob = ls.of(proc[0].v)
			r.Rank = rankOf(proc, len(proc) == s.kProc(), proc[0].v, procCount)
			r.Top = topLogprobs(proc, s.logpN, ls)
		}
		return r, nil
	}
	if s.topK > 0 || widen == nil { // proc holds every candidate
		return s.narrow(proc, narrowOpts{topK: s.topK, minP: s.minP > 0, topP: s.topP < 1, logpN: s.procLogpN()})
	}
	return s.wide(widen(), proc, s.procLogpN())
}

func (s *Sampler) finish(r Result, st *rawStats) Result {
	if st != nil {
		r = s.finishRaw(r, st)
	}
	return r
}

// sampleSparse is the usual path: the built-in processors touch a few ids,
// which are hidden from one fused pass over the row (set to -Inf) and
// merged back afterwards.
func (s *Sampler) sampleSparse(row []float32) (Result, error) {
	ed := &s.ed
	ed.gather(&s.ps, &s.h)
	defer ed.clear()
	if len(ed.ids) == 0 && s.greedy && s.logpN < 0 {
		id, err := s.argmax(row)
		return Result{ID: id}, err
	}
	ed.edits = ed.edits[:0]
	for _, id := range ed.ids {
		raw := row[id]
		if err := checkRaw(id, raw); err != nil {
			return Result{}, err
		}
		proc := ed.process(&s.ps, &s.h, id, raw)
		if err := checkProcessed(id, proc, "penalties or logit_bias"); err != nil {
			return Result{}, err
		}
		ed.edits = append(ed.edits, edit{id, raw, proc})
		row[id] = negInf
	}
	kRaw := 0
	if s.needRaw() {
		kRaw = max(s.logpN, 1)
	}
	kp := s.kProc()
	res, err := s.tb.scan(row, max(kp, kRaw), s.needRaw() || s.needProcSum())
	if err != nil {
		return Result{}, err
	}
	edits := ed.edits
	values := func(useProc bool) []float32 {
		s.extra = s.extra[:0]
		for _, e := range edits {
			if useProc {
				s.extra = append(s.extra, e.proc)
			} else {
				s.extra = append(s.extra, e.raw)
			}
		}
		return s.extra
	}
	var st *rawStats
	if s.needRaw() {
		// Keep all max(kp, kRaw) raw entries the scan found: the longer
		// the list, the likelier the sampled token's rank is read off it.
		kRaw = max(kp, kRaw)
		m, sum := combine(res.max, res.sum, values(false))
		s.tb2.reset(kRaw)
		for _, c := range res.top {
			s.tb2.offer(c)
		}
		for _, e := range edits {
			s.tb2.offer(cand{e.raw, e.id})
		}
		top := slices.Clone(s.tb2.sorted())
		st = &rawStats{
			ls:   newLogSoftmax(m, sum),
			top:  top,
			full: len(top) == kRaw,
			value: func(id int32) float32 {
				if k := ed.mark[id]; k != 0 {
					return edits[k-1].raw
				}
				return row[id]
			},
			count: func(v float32) int { return countAdjusted(row, v, edits, false) },
		}
	}
	s.tb2.reset(kp)
	for _, c := range res.top {
		s.tb2.offer(c)
	}
	for _, e := range edits {
		s.tb2.offer(cand{e.proc, e.id})
	}
	proc := s.tb2.sorted()
	r, err := s.decide(proc,
		func() logSoftmax { return newLogSoftmax(combine(res.max, res.sum, values(true))) },
		func(v float32) int { return countAdjusted(row, v, edits, true) },
		func() []float32 {
			for _, e := range edits {
				row[e.id] = e.proc
			}
			return row
		})
	if err != nil {
		return Result{}, err
	}
	return s.finish(r, st), nil
}

// rawScan computes raw logprob statistics over an untouched row.
func (s *Sampler) rawScan(row []float32) (*rawStats, error) {
	k := max(s.logpN, 1)
	res, err := s.tb.scan(row, k, true)
	if err != nil {
		return nil, err
	}
	top := slices.Clone(res.top)
	return &rawStats{
		ls:    newLogSoftmax(res.max, res.sum),
		top:   top,
		full:  len(top) == k,
		value: func(id int32) float32 { return row[id] },
		count: func(v float32) int { return countRow(row, v) },
	}, nil
}

// sampleAllowed: allowed_token_ids makes the processed universe the
// allowed ids, whatever the vocabulary size. The decision needs only them,
// so it comes first, and raw logprobs then take one pass over the row that
// also counts the sampled token's rank.
func (s *Sampler) sampleAllowed(row []float32) (Result, error) {
	ed := &s.ed
	ed.gather(&s.ps, &s.h)
	defer ed.clear()
	kp := s.kProc()
	if !s.greedy && s.topK == 0 {
		kp = len(s.ps.allowed)
	}
	s.tb2.reset(kp)
	s.extra = s.extra[:0]
	for _, id := range s.ps.allowed {
		v := row[id]
		if err := checkRaw(id, v); err != nil {
			return Result{}, err
		}
		if ed.mark[id] != 0 {
			v = ed.process(&s.ps, &s.h, id, v)
			if err := checkProcessed(id, v, "penalties or logit_bias"); err != nil {
				return Result{}, err
			}
		}
		s.tb2.offer(cand{v, id})
		s.extra = append(s.extra, v)
	}
	proc := s.tb2.sorted()
	vals := s.extra
	r, err := s.decide(proc,
		func() logSoftmax { return newLogSoftmax(combine(negInf, 0, vals)) },
		func(v float32) int { return countRow(vals, v) },
		nil) // never wide: the allowed list bounds the candidates
	if err != nil || !s.needRaw() {
		return r, err
	}
	v := row[r.ID]
	res, err := s.tb.scanCount(row, max(s.logpN, 1), v)
	if err != nil {
		return Result{}, err
	}
	ls := newLogSoftmax(res.max, res.sum)
	r.Logprob, r.Rank = ls.of(v), res.ge
	r.Top = topLogprobs(res.top, s.logpN, ls)
	return r, nil
}

// sampleDense runs the processors in place, as vLLM does, because a custom
// processor may change any logit.
func (s *Sampler) sampleDense(row []float32) (Result, error) {
	var st *rawStats
	if s.needRaw() {
		var err error
		if st, err = s.rawScan(row); err != nil {
			return Result{}, err
		}
		s.rawCopy = append(s.rawCopy[:0], row...)
		raw := s.rawCopy
		st.value = func(id int32) float32 { return raw[id] }
		st.count = func(v float32) int { return countRow(raw, v) }
	}
	if err := s.processRow(row); err != nil {
		return Result{}, err
	}
	k, widen := s.kProc(), func() []float32 { return row }
	if s.ps.allowed != nil { // sample the allowed list as sampleAllowed does
		widen = nil
		if !s.greedy && s.topK == 0 {
			k = len(s.ps.allowed)
		}
	}
	res, err := s.tb.scan(row, k, s.needProcSum())
	if err != nil {
		if le, ok := err.(*LogitError); ok {
			le.Stage = "after the logits processors"
		}
		return Result{}, err
	}
	r, err := s.decide(res.top,
		func() logSoftmax { return newLogSoftmax(res.max, res.sum) },
		func(v float32) int { return countRow(row, v) },
		widen)
	if err != nil {
		return Result{}, err
	}
	return s.finish(r, st), nil
}

// processRow applies allowed_token_ids, bad_words, logit_bias, min_tokens,
// the custom processors and the penalties to row in place, in vLLM's order.
func (s *Sampler) processRow(row []float32) error {
	ed := &s.ed
	ed.gather(&s.ps, &s.h)
	defer ed.clear()
	if s.ps.allowed != nil {
		if s.allowedMask == nil {
			s.allowedMask = make([]bool, s.vocab)
			for _, id := range s.ps.allowed {
				s.allowedMask[id] = true
			}
		}
		for i, ok := range s.allowedMask {
			if !ok {
				row[i] = negInf
			}
		}
	}
	for i, id := range ed.ids {
		row[id] = pre(row[id], ed.banned[i], ed.bias[i])
	}
	for i, lp := range s.ps.custom {
		if err := lp.Process(row, s.h.out); err != nil {
			return fmt.Errorf("sampler: logits processor %d: %w", i, err)
		}
	}
	for _, id := range ed.ids {
		row[id] = s.ps.pen(id, row[id], &s.h)
	}
	return nil
}
