package sampler

import "slices"

// sparse is a row whose processors are the built-in ones, which touch few
// ids: the touched ids' logits are taken out into vals and edited alone,
// and best merges them with the rest of the universe. The universe is the
// row (the touched ids set to -Inf in it, so that one fused pass over it
// skips them), or a list of entries: the allowed ids (after allow) or
// SampleCandidates' candidates.
type sparse struct {
	s     *Sampler
	row   []float32 // the model's row; nil for candidates
	list  bool      // the universe is vals rather than the row
	cands bool      // vals are the row's best: the ids left out are <= bound
	bound float32
	// vals: in row mode the touched ids, parallel to ed.ids; in list mode
	// every entry of the list, in its order.
	vals []edit
	at   []int32 // parallel to ed.ids: the index in vals, -1 outside the list
	ed   *editor
	res  scanResult // row mode: best's scan of the row
	raw  rawStats   // row mode: raw logprob statistics, when asked
	proc []float32  // list mode: the processed values, in list order (greedy processed logprobs)
}

// edit is one logit of a sparse row: its raw and processed value.
type edit struct {
	id        int32
	raw, proc float32
}

// check rejects a NaN or +Inf raw logit, then processed logit.
func (e edit) check() error {
	if err := checkRaw(e.id, e.raw); err != nil {
		return err
	}
	return checkProcessed(e.id, e.proc, "penalties or logit_bias")
}

func (s *Sampler) sparse(row []float32) *sparse {
	x := &s.sp
	*x = sparse{s: s, row: row, vals: x.vals[:0], at: x.at[:0], proc: x.proc[:0]}
	return x
}

// candidates is a sparse row whose universe is the list of the row's best
// logits, all >= bound.
func (s *Sampler) candidates(ids []int32, logits []float32, bound float32) *sparse {
	x := s.sparse(nil)
	x.list, x.cands, x.bound = true, true, bound
	x.vals = slices.Grow(x.vals, len(ids))[:len(ids)]
	for i, id := range ids {
		x.vals[i] = edit{id, logits[i], logits[i]}
	}
	return x
}

// keepRaw has nothing to do: vals keep the touched ids' raw logits, and
// the rest of the row is never written.
func (x *sparse) keepRaw() error { return nil }

// allow makes the allowed ids the universe.
func (x *sparse) allow(ids []int32) {
	x.list = true
	for _, id := range ids {
		x.vals = append(x.vals, edit{id, x.row[id], x.row[id]})
	}
}

// touch takes the touched ids' logits out of the row into vals (-Inf in
// the row, so that best's scan skips them), or finds them in the list.
func (x *sparse) touch(ed *editor) {
	x.ed = ed
	if x.list {
		if len(ed.ids) == 0 {
			return
		}
		for range ed.ids {
			x.at = append(x.at, -1)
		}
		for j, e := range x.vals {
			if k := ed.mark[e.id]; k != 0 {
				x.at[k-1] = int32(j)
			}
		}
		return
	}
	for k, id := range ed.ids {
		raw := x.row[id]
		x.vals = append(x.vals, edit{id, raw, raw})
		x.at = append(x.at, int32(k))
		x.row[id] = negInf
	}
}

// slot is the index in vals of a touched id, or -1.
func (x *sparse) slot(id int32) int32 { return x.at[x.ed.mark[id]-1] }

func (x *sparse) ban(ids []int32) {
	for _, id := range ids {
		if j := x.slot(id); j >= 0 {
			x.vals[j].proc = negInf
		}
	}
}

func (x *sparse) bias(ids []int32, vals []float32) {
	for i, id := range ids {
		if j := x.slot(id); j >= 0 {
			x.vals[j].proc += vals[i]
		}
	}
}

func (x *sparse) custom([]LogitsProcessor, []int32) error {
	panic("sampler: custom processors need a dense row")
}

func (x *sparse) penalize(ps *procState, h *history) {
	for k, id := range x.ed.ids {
		if j := x.at[k]; j >= 0 {
			x.vals[j].proc = ps.pen(id, x.vals[j].proc, h)
		}
	}
}

func (x *sparse) best(k int) ([]cand, error) {
	if x.list {
		return x.bestOfList(k)
	}
	s := x.s
	for _, e := range x.vals {
		if err := e.check(); err != nil {
			return nil, err
		}
	}
	kRaw := 0
	if s.needRaw() {
		kRaw = max(s.logpN, 1)
	}
	var err error
	x.res, err = s.tb.scan(x.row, max(k, kRaw), s.needRaw() || s.needProcSum())
	if err != nil {
		return nil, err
	}
	if s.needRaw() {
		// Keep all max(k, kRaw) raw entries the scan found: the longer
		// the list, the likelier the sampled token's rank is read off it.
		kRaw = max(k, kRaw)
		s.tb2.reset(kRaw)
		for _, c := range x.res.top {
			s.tb2.offer(c)
		}
		for _, e := range x.vals {
			s.tb2.offer(cand{e.raw, e.id})
		}
		s.rawTop = append(s.rawTop[:0], s.tb2.sorted()...)
		x.raw = rawStats{
			ls:   newLogSoftmax(combine(x.res.max, x.res.sum, x.values(false))),
			top:  s.rawTop,
			full: len(s.rawTop) == kRaw,
		}
	}
	s.tb2.reset(k)
	for _, c := range x.res.top {
		s.tb2.offer(c)
	}
	for _, e := range x.vals {
		s.tb2.offer(cand{e.proc, e.id})
	}
	return s.tb2.sorted(), nil
}

// bestOfList is best over a list. A candidate list rules only when the
// edits left its kept best above every logit left out.
func (x *sparse) bestOfList(k int) ([]cand, error) {
	s := x.s
	s.tb2.reset(k)
	keep := s.needProcSum() // for logSoftmax and count
	// Candidates were checked on entry, and their processors only lower
	// logits.
	check := !x.cands
	for _, e := range x.vals {
		if check {
			if err := e.check(); err != nil {
				return nil, err
			}
		}
		s.tb2.offer(cand{e.proc, e.id})
		if keep {
			x.proc = append(x.proc, e.proc)
		}
	}
	top := s.tb2.sorted()
	if x.cands && len(x.ed.ids) > 0 && len(x.vals) < s.vocab {
		// Tokens left out have logits <= bound and were only lowered:
		// the kept ones must beat bound strictly.
		k := 1
		if !s.greedy {
			k = s.topK
		}
		if len(top) < k || !(top[k-1].v > x.bound) {
			return nil, ErrNeedsFullRow
		}
	}
	return top, nil
}

// values are the touched ids' raw or processed logits, in order.
func (x *sparse) values(proc bool) []float32 {
	v := x.s.extra[:0]
	for _, e := range x.vals {
		if proc {
			v = append(v, e.proc)
		} else {
			v = append(v, e.raw)
		}
	}
	x.s.extra = v
	return v
}

func (x *sparse) logSoftmax() logSoftmax {
	if x.list {
		return newLogSoftmax(combine(negInf, 0, x.proc))
	}
	return newLogSoftmax(combine(x.res.max, x.res.sum, x.values(true)))
}

func (x *sparse) count(v float32) int {
	if x.list {
		return countGE(x.proc, v)
	}
	return countAdjusted(x.row, v, x.vals, true)
}

// whole writes the touched ids' processed logits back into the row.
func (x *sparse) whole() []float32 {
	if x.list {
		return nil
	}
	for _, e := range x.vals {
		x.row[e.id] = e.proc
	}
	return x.row
}

// rawLogprobs: in row mode best kept the statistics; a list takes one pass
// over the (untouched) row that also counts the sampled token's rank.
func (x *sparse) rawLogprobs(r Result) (Result, error) {
	s := x.s
	if !x.list {
		v := x.row[r.ID]
		if k := x.ed.mark[r.ID]; k != 0 {
			v = x.vals[k-1].raw
		}
		return s.finishRaw(r, &x.raw, v, func(v float32) int { return countAdjusted(x.row, v, x.vals, false) }), nil
	}
	v := x.row[r.ID]
	res, err := s.tb.scanCount(x.row, max(s.logpN, 1), v)
	if err != nil {
		return Result{}, err
	}
	ls := newLogSoftmax(res.max, res.sum)
	r.Logprob, r.Rank = ls.of(v), res.ge
	r.Top = topLogprobs(res.top, s.logpN, ls)
	return r, nil
}
