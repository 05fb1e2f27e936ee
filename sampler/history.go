package sampler

// history tracks the prompt and the generated tokens for the penalties,
// bad_words and min_tokens. Memory is proportional to the vocabulary only
// for the dense marks, allocated once per Sampler.
type history struct {
	out      []int32 // generated tokens, in order
	inPrompt []bool  // per id: appears in the prompt (nil without repetition penalty)
	count    []int32 // per id: occurrences in out
	seen     []int32 // distinct ids of prompt ∪ out, first-seen order (repetition penalty)
	outIDs   []int32 // distinct ids of out, first-seen order (frequency/presence)
	trackRep bool
}

func newHistory(vocab int, prompt []int32, trackRep bool) history {
	h := history{count: make([]int32, vocab), trackRep: trackRep}
	if trackRep {
		h.inPrompt = make([]bool, vocab)
		for _, id := range prompt {
			if !h.inPrompt[id] {
				h.inPrompt[id] = true
				h.seen = append(h.seen, id)
			}
		}
	}
	return h
}

func (h *history) add(id int32) {
	h.out = append(h.out, id)
	if h.count[id] == 0 {
		h.outIDs = append(h.outIDs, id)
		if h.trackRep && !h.inPrompt[id] {
			h.seen = append(h.seen, id)
		}
	}
	h.count[id]++
}

// endsWith reports whether out ends with seq.
func (h *history) endsWith(seq []int32) bool {
	if len(seq) > len(h.out) {
		return false
	}
	tail := h.out[len(h.out)-len(seq):]
	for i, id := range seq {
		if tail[i] != id {
			return false
		}
	}
	return true
}
