package sampler

import (
	"fmt"
	"slices"
)

// Sampler samples one request's tokens. It keeps the request's state: the
// prompt and generated tokens (for penalties, bad_words and min_tokens)
// and the seeded random stream. Sample and SampleCandidates append the
// token they return to the history; Accept appends a token chosen
// elsewhere. A Sampler is not safe for concurrent use.
type Sampler struct {
	p      Params
	vocab  int
	greedy bool
	temp   float32
	topK   int // 0: off
	topP   float32
	minP   float32
	logpN  int // top-n logprobs, -1 when off
	raw    bool
	ps     procState
	h      history
	rng    rng
	ed     editor

	// scratch, reused across tokens
	dn          dense
	sp          sparse
	sl          shortList
	wr          wholeRow
	tb, tb2     topBuf
	extra       []float32
	rawTop      []cand
	blocks      []float64
	nuc         []cand
	rawCopy     []float32
	allowedMask []bool
}

// New validates p against the vocabulary size and returns a Sampler for one
// request. eos holds the model's end-of-sequence ids (banned until
// min_tokens, like stop_token_ids); prompt is the prompt's token ids (for
// the repetition penalty).
func New(p Params, vocab int, eos []int32, prompt []int32) (*Sampler, error) {
	if err := p.Validate(vocab); err != nil {
		return nil, err
	}
	for i, id := range eos {
		if id < 0 || int(id) >= vocab {
			return nil, &ParamError{Param: "eos", Value: id, Reason: fmt.Sprintf("entry %d outside the vocabulary [0, %d)", i, vocab)}
		}
	}
	for i, id := range prompt {
		if id < 0 || int(id) >= vocab {
			return nil, &ParamError{Param: "prompt", Value: id, Reason: fmt.Sprintf("token %d outside the vocabulary [0, %d)", i, vocab)}
		}
	}
	s := &Sampler{p: p, vocab: vocab, greedy: p.Greedy(), logpN: -1}
	s.temp = float32(p.effectiveTemperature())
	if !s.greedy {
		s.topK = p.topK(vocab)
		s.topP = float32(p.TopP)
		s.minP = float32(p.MinP)
	} else {
		s.temp, s.topP = 1, 1
	}
	if p.Logprobs != nil {
		s.logpN = *p.Logprobs
		s.raw = p.logprobsMode() == RawLogprobs
	}
	seed := randomSeed()
	if p.Seed != nil && *p.Seed != -1 {
		seed = *p.Seed
	}
	s.rng = newRNG(seed)

	ps := &s.ps
	if p.AllowedTokenIDs != nil {
		ps.allowed = slices.Clone(p.AllowedTokenIDs)
		slices.Sort(ps.allowed)
		ps.allowed = slices.Compact(ps.allowed)
	}
	for _, seq := range p.BadWordIDs {
		ps.badWords = append(ps.badWords, slices.Clone(seq))
	}
	for id := range p.LogitBias {
		ps.biasIDs = append(ps.biasIDs, id)
	}
	slices.Sort(ps.biasIDs)
	for _, id := range ps.biasIDs {
		ps.biasVals = append(ps.biasVals, float32(p.LogitBias[id]))
	}
	ps.minTokens = p.MinTokens
	if p.MinTokens > 0 {
		ps.stopIDs = append(slices.Clone(p.StopTokenIDs), eos...)
		slices.Sort(ps.stopIDs)
		ps.stopIDs = slices.Compact(ps.stopIDs)
	}
	ps.rep = float32(p.RepetitionPenalty)
	ps.freq = float32(p.FrequencyPenalty)
	ps.pres = float32(p.PresencePenalty)
	ps.custom = slices.Clone(p.Processors)
	s.h = newHistory(vocab, prompt, ps.rep != 1)
	s.ed.mark = make([]int32, vocab)
	return s, nil
}

// Params returns the request's parameters.
func (s *Sampler) Params() Params { return s.p }

// Output returns the tokens generated so far (do not modify).
func (s *Sampler) Output() []int32 { return s.h.out }

// Accept appends a token that was not returned by Sample or
// SampleCandidates (a forced token) to the history.
func (s *Sampler) Accept(id int32) error {
	if id < 0 || int(id) >= s.vocab {
		return &ParamError{Param: "token", Value: id, Reason: fmt.Sprintf("outside the vocabulary [0, %d)", s.vocab)}
	}
	s.h.add(id)
	return nil
}

// Sample picks the next token from a full row of logits (one per vocabulary
// entry) and appends it to the history. It uses logits as scratch: their
// contents are unspecified afterwards.
func (s *Sampler) Sample(logits []float32) (Result, error) {
	if len(logits) != s.vocab {
		return Result{}, &RowError{What: "logits", Got: len(logits), Want: s.vocab}
	}
	if len(s.ps.custom) > 0 {
		return s.pipeline(s.dense(logits))
	}
	return s.pipeline(s.sparse(logits))
}
