package sampler

// logitRow is one representation of a row of logits: each method is one step
// of the pipeline, applied to what the representation holds. There are two:
// dense (the whole row, edited in place: custom processors may change any
// logit) and sparse (the built-in processors touch few ids, which are
// edited alone; its universe is the row, or a list: the allowed ids, or
// SampleCandidates' candidates).
type logitRow interface {
	// keepRaw keeps what raw logprobs need of the row as the model gave it.
	keepRaw() error
	// allow makes every id outside ids -Inf.
	allow(ids []int32)
	// touch takes note of the ids the built-in processors edit this step
	// (a sparse row takes their logits out).
	touch(ed *editor)
	// ban makes ids -Inf.
	ban(ids []int32)
	// bias adds vals[i] to ids[i]'s logit.
	bias(ids []int32, vals []float32)
	// custom runs the custom processors, in order, in place.
	custom(lps []LogitsProcessor, out []int32) error
	// penalize applies the penalties to the touched ids.
	penalize(ps *procState, h *history)
	// best rejects NaN and +Inf logits, raw or processed, and returns the
	// k best processed logits above -Inf, best first (ErrNeedsFullRow when
	// a candidate list cannot rule).
	best(k int) ([]cand, error)
	// logSoftmax is the processed row's log-softmax (after best, when it
	// summed: greedy processed logprobs).
	logSoftmax() logSoftmax
	// count is how many processed logits are >= v.
	count(v float32) int
	// whole is the processed row, or nil when the universe is a list (the
	// allowed ids, the candidates), whose best are the whole distribution.
	whole() []float32
	// rawLogprobs sets r's logprob, rank and top list from the row as the
	// model gave it.
	rawLogprobs(r Result) (Result, error)
}

// dist is what the token is drawn from, once the logits are processed:
// the best processed logits (a short list), or the whole processed row.
type dist interface {
	temperature(t float32)
	minP(p float32) // p relative to the best token's probability; 0: off
	topK(k int)     // 0: off
	topP(p float32) // 1: off
	// draw draws one token from what survived, with its processed logprobs
	// (top logpN; none when logpN < 0).
	draw(logpN int) (Result, error)
}

// pipeline samples one token from x: the sampler's order, vLLM's, stated
// once. Every path runs it: Sample's dense and sparse rows (with
// allowed_token_ids, a sparse row's universe becomes the allowed ids),
// SampleCandidates' list, and the tests' processRow, which stops it before
// the selection.
func (s *Sampler) pipeline(x logitRow) (Result, error) {
	ps := &s.ps
	// Raw logprobs are the log-softmax of the row as the model produced it.
	if s.needRaw() {
		if err := x.keepRaw(); err != nil {
			return Result{}, err
		}
	}
	// allowed_token_ids: everything else is -Inf.
	if ps.allowed != nil {
		x.allow(ps.allowed)
	}
	// The built-in processors below touch few ids: bans, logit_bias ids,
	// the history for the penalties.
	ed := &s.ed
	ed.gather(ps, &s.h)
	defer ed.clear()
	x.touch(ed)
	// bad_words: the last token of a word whose rest ends the output.
	x.ban(ed.badWords)
	// Logits processors: logit_bias, min_tokens (stop ids and EOS banned
	// until N tokens are out), then the custom ones.
	x.bias(ps.biasIDs, ps.biasVals)
	x.ban(ed.minTokens)
	if len(ps.custom) > 0 {
		if err := x.custom(ps.custom, s.h.out); err != nil {
			return Result{}, err
		}
	}
	// Penalties: repetition (prompt and output), frequency and presence
	// (output).
	x.penalize(ps, &s.h)

	// The best processed logits, as many as the decision needs.
	top, err := x.best(s.kProc())
	if err != nil {
		return Result{}, err
	}
	if len(top) == 0 {
		return Result{}, ErrAllMasked
	}
	var r Result
	if s.greedy {
		// Greedy short-cut: temperature 0 takes the argmax, ties to the
		// lowest id; no truncation, no draw.
		r = s.argmaxOf(x, top)
	} else {
		// Temperature, min_p, then top_k and top_p jointly, and one
		// draw, over a short list or the whole processed row.
		d := s.distribution(x, top)
		d.temperature(s.temp)
		d.minP(s.minP)
		d.topK(s.topK)
		d.topP(s.topP)
		if r, err = d.draw(s.procLogpN()); err != nil {
			return Result{}, err
		}
	}
	// Raw logprobs: the token's place in the row as the model produced it.
	if s.needRaw() {
		if r, err = x.rawLogprobs(r); err != nil {
			return Result{}, err
		}
	}
	// The token joins the output that the next step's processors see.
	s.h.add(r.ID)
	return r, nil
}

// kProc is how many of the best processed logits the decision needs.
func (s *Sampler) kProc() int {
	if !s.greedy && s.topK == 0 && s.ps.allowed != nil {
		return len(s.ps.allowed) // the allowed ids are the whole distribution
	}
	k := 1
	if !s.greedy && s.topK > 0 {
		k = s.topK
	}
	if s.logpN >= 0 && !s.raw {
		k = max(k, s.logpN)
	}
	if !s.greedy && s.topK == 0 && s.topP < 1 {
		k = max(k, wideTop)
	}
	return k
}

// argmaxOf is the greedy decision: the best processed logit, with
// processed logprobs over the whole processed row when asked.
func (s *Sampler) argmaxOf(x logitRow, top []cand) Result {
	r := Result{ID: top[0].id}
	if s.needProcSum() {
		ls := x.logSoftmax()
		r.Logprob = ls.of(top[0].v)
		r.Rank = rankOf(top, len(top) == s.kProc(), top[0].v, x.count)
		r.Top = topLogprobs(top, s.logpN, ls)
	}
	return r
}

// distribution is what the token is drawn from: the best processed logits
// when they hold every token that can survive (top_k bounds them, or the
// universe is a list), else the whole processed row.
func (s *Sampler) distribution(x logitRow, top []cand) dist {
	if s.topK == 0 {
		if row := x.whole(); row != nil {
			s.wr = wholeRow{s: s, row: row, top: top}
			return &s.wr
		}
	}
	return s.shortList(top)
}

// needProcSum: greedy with processed logprobs is a log-softmax of the
// whole processed row.
func (s *Sampler) needProcSum() bool { return s.greedy && s.logpN >= 0 && !s.raw }

func (s *Sampler) needRaw() bool { return s.logpN >= 0 && s.raw }

func (s *Sampler) procLogpN() int {
	if s.logpN >= 0 && !s.raw {
		return s.logpN
	}
	return -1
}
