package sampler

import "math"

// rawStats is the raw log-softmax, for raw logprobs: its normaliser and the
// best raw logits.
type rawStats struct {
	ls   logSoftmax
	top  []cand // the best max(n,1) raw logits (or more), best first
	full bool   // top was cut (more entries may tie its last one)
}

// finishRaw sets the raw logprob, rank and top list of a decision whose
// token has raw logit v; count counts the raw logits >= a value.
func (s *Sampler) finishRaw(r Result, st *rawStats, v float32, count func(float32) int) Result {
	r.Logprob = st.ls.of(v)
	r.Rank = rankOf(st.top, st.full, v, count)
	r.Top = topLogprobs(st.top, s.logpN, st.ls)
	return r
}

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

// checkProcessed rejects a processed logit that is NaN or +Inf.
func checkProcessed(id int32, v float32, stage string) error {
	if v != v || v > math.MaxFloat32 {
		return &LogitError{Index: int(id), Value: v, Stage: stage}
	}
	return nil
}

func checkRaw(id int32, v float32) error { return checkProcessed(id, v, "model") }
