package sampler

import "math"

var negInf = float32(math.Inf(-1))

// The built-in processors, in vLLM's order:
//
//	allowed_token_ids → bad_words → logit_bias → min_tokens → custom →
//	repetition_penalty → frequency_penalty → presence_penalty
//
// Everything but allowed_token_ids and the custom processors touches a few
// ids per step, so the sampler applies them sparsely: it lists the touched
// ids, computes each one's processed logit from its raw logit (pre, then
// pen), and never rewrites the row. allowed_token_ids narrows the universe
// instead of masking the row. Custom processors force the dense path,
// which applies the same functions in place.

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

// collectBans appends to bans the ids the current step bans: the last
// token of every bad word whose prefix ends the output, and the stop ids
// while fewer than min_tokens tokens are out.
func (ps *procState) collectBans(bans []int32, h *history) []int32 {
	for _, seq := range ps.badWords {
		if h.endsWith(seq[:len(seq)-1]) {
			bans = append(bans, seq[len(seq)-1])
		}
	}
	if len(h.out) < ps.minTokens {
		bans = append(bans, ps.stopIDs...)
	}
	return bans
}

// pre applies bad_words/min_tokens bans and logit_bias (bias, 0 for none)
// to one logit.
func pre(v float32, banned bool, bias float32) float32 {
	if banned {
		return negInf
	}
	return v + bias
}

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

// edit is one touched id of the sparse path.
type edit struct {
	id        int32
	raw, proc float32
}

// editor lists the ids the processors touch this step. mark is a per-id
// scratch: 0 for untouched ids, else 1 + the id's index in ids (all zero
// again after clear).
type editor struct {
	mark   []int32
	ids    []int32
	banned []bool    // parallel to ids
	bias   []float32 // parallel to ids: the logit_bias, or 0
	bans   []int32
	edits  []edit // parallel to ids, filled by the sparse path
}

func (e *editor) touch(id int32, ban bool, bias float32) {
	if k := e.mark[id]; k != 0 {
		e.banned[k-1] = e.banned[k-1] || ban
		e.bias[k-1] += bias
		return
	}
	e.ids = append(e.ids, id)
	e.banned = append(e.banned, ban)
	e.bias = append(e.bias, bias)
	e.mark[id] = int32(len(e.ids))
}

// gather marks the ids this step's processors touch.
func (e *editor) gather(ps *procState, h *history) {
	e.ids, e.banned, e.bias = e.ids[:0], e.banned[:0], e.bias[:0]
	e.bans = ps.collectBans(e.bans[:0], h)
	for _, id := range e.bans {
		e.touch(id, true, 0)
	}
	for i, id := range ps.biasIDs {
		e.touch(id, false, ps.biasVals[i])
	}
	if ps.rep != 1 {
		for _, id := range h.seen {
			e.touch(id, false, 0)
		}
	}
	if ps.freq != 0 || ps.pres != 0 {
		for _, id := range h.outIDs {
			e.touch(id, false, 0)
		}
	}
}

// process computes a touched id's processed logit from its raw one.
func (e *editor) process(ps *procState, h *history, id int32, raw float32) float32 {
	k := e.mark[id] - 1
	return ps.pen(id, pre(raw, e.banned[k], e.bias[k]), h)
}

// clear resets the marks of the touched ids.
func (e *editor) clear() {
	for _, id := range e.ids {
		e.mark[id] = 0
	}
}
