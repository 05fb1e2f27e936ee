package sampler

import "math"

var negInf = float32(math.Inf(-1))

// The built-in processors. They apply in the pipeline's order (pipeline.go):
//
//	allowed_token_ids → bad_words → logit_bias → min_tokens → custom →
//	repetition_penalty → frequency_penalty → presence_penalty
//
// Everything but allowed_token_ids and the custom processors touches a few
// ids per step: the editor lists them, and a sparse row edits their logits
// alone and never rewrites the rest. allowed_token_ids makes a sparse row's
// universe the allowed ids instead of masking the row. Custom processors
// need a dense row, which takes the same steps in place.

// procState is the per-Sampler configuration of the built-in processors,
// with parameters already in float32 as vLLM's tensors hold them.
type procState struct {
	allowed   []int32 // sorted, distinct; nil when off
	badWords  [][]int32
	biasIDs   []int32   // logit_bias ids, sorted
	biasVals  []float32 // and their biases
	stopIDs   []int32   // stop_token_ids ∪ eos, banned until min_tokens
	minTokens int
	rep       float32 // repetition penalty; 1 when off
	freq      float32
	pres      float32
	custom    []LogitsProcessor
}

func (ps *procState) penalties() bool { return ps.rep != 1 || ps.freq != 0 || ps.pres != 0 }

// pen applies the three penalties to one logit, as vLLM does: the
// repetition penalty over prompt ∪ output divides a positive logit and
// multiplies any other; frequency and presence (OpenAI semantics) subtract
// over output tokens only.
func (ps *procState) pen(id int32, v float32, h *history) float32 {
	n := h.count[id]
	if ps.rep != 1 && (n > 0 || h.inPrompt[id]) {
		if v > 0 {
			v /= ps.rep
		} else {
			v *= ps.rep
		}
	}
	if n > 0 {
		v -= float32(ps.freq * float32(n))
		v -= ps.pres
	}
	return v
}

// editor lists the ids the built-in processors touch this step. mark is a
// per-id scratch: 0 for untouched ids, else 1 + the id's index in ids (all
// zero again after clear).
type editor struct {
	mark      []int32
	ids       []int32 // every touched id, first-touched order
	badWords  []int32 // the ids bad_words bans this step
	minTokens []int32 // the stop ids, banned while fewer than min_tokens are out; nil after
}

func (e *editor) add(id int32) {
	if e.mark[id] == 0 {
		e.ids = append(e.ids, id)
		e.mark[id] = int32(len(e.ids))
	}
}

// gather lists the ids this step's processors touch: the last token of
// every bad word whose prefix ends the output, the stop ids while
// min_tokens is not reached, the logit_bias ids, and the history the
// penalties apply to.
func (e *editor) gather(ps *procState, h *history) {
	e.ids, e.badWords, e.minTokens = e.ids[:0], e.badWords[:0], nil
	for _, seq := range ps.badWords {
		if h.endsWith(seq[:len(seq)-1]) {
			e.badWords = append(e.badWords, seq[len(seq)-1])
		}
	}
	if len(h.out) < ps.minTokens {
		e.minTokens = ps.stopIDs
	}
	for _, id := range e.badWords {
		e.add(id)
	}
	for _, id := range e.minTokens {
		e.add(id)
	}
	for _, id := range ps.biasIDs {
		e.add(id)
	}
	if ps.rep != 1 {
		for _, id := range h.seen {
			e.add(id)
		}
	}
	if ps.freq != 0 || ps.pres != 0 {
		for _, id := range h.outIDs {
			e.add(id)
		}
	}
}

// clear resets the marks of the touched ids.
func (e *editor) clear() {
	for _, id := range e.ids {
		e.mark[id] = 0
	}
}
