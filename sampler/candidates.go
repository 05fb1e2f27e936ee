package sampler

import (
	"fmt"
	"math"
	"slices"
)

// candidateMargin is how many extra candidates to ask for when penalties or
// negative biases may push some of the best ones down.
const candidateMargin = 16

// CandidateCount returns how many of the row's best logits (ids and
// values, ties to the lowest id, as the GPU TopK op produces them)
// SampleCandidates needs to give exactly the full row's result this step,
// or 0 when the full row is needed. Candidates suffice for greedy
// decoding and for temperature with top_k (plus min_p and top_p), with
// processed logprobs or none, and with processors that can only lower
// logits (bad_words, min_tokens, negative logit_bias, penalties of 1 and
// above, 0 and above). The answer changes as tokens are generated
// (min_tokens); ask before each step.
func (s *Sampler) CandidateCount() int {
	ps := &s.ps
	switch {
	case len(ps.custom) > 0, ps.allowed != nil:
		return 0
	case s.logpN >= 0 && (s.raw || s.greedy):
		return 0 // a log-softmax over the whole row
	case !s.greedy && s.topK == 0:
		return 0 // the distribution spans the whole row
	case ps.rep < 1, ps.freq < 0, ps.pres < 0:
		return 0 // may raise logits outside the candidates
	}
	lowering := ps.penalties()
	for _, b := range ps.biasVals {
		if b > 0 {
			return 0
		}
		lowering = true
	}
	need := 1
	if !s.greedy {
		need = s.topK
	}
	need += len(ps.badWords)
	if len(s.h.out) < ps.minTokens {
		need += len(ps.stopIDs)
	}
	if lowering {
		need += candidateMargin
	}
	return min(need, s.vocab)
}

// NeedsFullRow reports whether this step needs the full logits row (Sample)
// rather than a candidate set (SampleCandidates).
func (s *Sampler) NeedsFullRow() bool { return s.CandidateCount() == 0 }

// SampleCandidates picks the next token from the row's best logits: ids
// and their logits, at least CandidateCount of them, which must be the
// row's best (ties to the lowest id). The result is the one Sample would
// give on the full row, bit for bit. It returns ErrNeedsFullRow, changing
// nothing, when the full row is needed: when CandidateCount is 0, or when
// the penalties pushed the candidates' best below the best logit left
// out, which the candidates cannot rule on.
func (s *Sampler) SampleCandidates(ids []int32, logits []float32) (Result, error) {
	need := s.CandidateCount()
	if need == 0 {
		return Result{}, ErrNeedsFullRow
	}
	if len(ids) != len(logits) {
		return Result{}, &RowError{What: "candidate logits", Got: len(logits), Want: len(ids)}
	}
	if len(ids) < need || len(ids) > s.vocab {
		return Result{}, &RowError{What: "candidate ids", Got: len(ids), Want: need}
	}
	bound := logits[0]
	for i, id := range ids {
		if id < 0 || int(id) >= s.vocab {
			return Result{}, &ParamError{Param: "candidate ids", Value: id, Reason: fmt.Sprintf("outside the vocabulary [0, %d)", s.vocab)}
		}
		v := logits[i]
		if v != v || v > math.MaxFloat32 {
			return Result{}, &LogitError{Index: i, Value: v, Stage: "candidates"}
		}
		bound = min(bound, v)
	}
	dup := slices.Clone(ids)
	slices.Sort(dup)
	for i := 1; i < len(dup); i++ {
		if dup[i] == dup[i-1] {
			return Result{}, &ParamError{Param: "candidate ids", Value: dup[i], Reason: "listed twice"}
		}
	}

	return s.pipeline(s.candidates(ids, logits, bound))
}
