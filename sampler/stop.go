package sampler

import (
	"slices"
	"strings"
)

// FinishReason says why generation ended, as in the OpenAI API.
type FinishReason string

const (
	// FinishStop: an EOS id, a stop_token_ids entry or a stop string.
	FinishStop FinishReason = "stop"
	// FinishLength: max_tokens reached (the engine also uses it when the
	// context is full).
	FinishLength FinishReason = "length"
	// FinishGrammar: structured output's grammar allows no token here, or
	// none of the tokens it allows survived the other processors.
	FinishGrammar FinishReason = "grammar_dead_end"
)

// Finish describes the end of generation. Reason is empty while generation
// goes on.
type Finish struct {
	Reason     FinishReason
	StopString string // the stop string matched, if any
	StopToken  int32  // the stop token id, or -1 (EOS and stop_token_ids)
}

// StopChecker applies a request's stop conditions, in vLLM's order:
// max_tokens, then EOS (unless ignore_eos) and stop_token_ids once
// min_tokens tokens are out, then stop strings over the decoded text. It
// also decides what text is safe to show while streaming: it holds back
// the longest tail that could still grow into a stop string, so a stop
// string is never shown, even when it is split across tokens.
//
// Two choices differ from vLLM on purpose: when several stop strings match
// in the same step, the one that starts first wins (vLLM takes the first in
// the list, which can leave an earlier one visible); and text is held back
// only while it could be a stop string's beginning (vLLM holds back the
// longest stop string's length minus one).
type StopChecker struct {
	stop      []string
	stopIDs   []int32
	eos       []int32
	ignoreEOS bool
	include   bool
	maxTokens int
	minTokens int

	n       int    // tokens seen
	pending string // text not shown yet
	done    Finish
}

// NewStopChecker returns the checker for a request; eos are the model's
// end-of-sequence ids. Validate p first.
func NewStopChecker(p *Params, eos []int32) *StopChecker {
	return &StopChecker{
		stop:      slices.Clone(p.Stop),
		stopIDs:   slices.Clone(p.StopTokenIDs),
		eos:       slices.Clone(eos),
		ignoreEOS: p.IgnoreEOS,
		include:   p.IncludeStopStr,
		maxTokens: p.MaxTokens,
		minTokens: p.MinTokens,
		done:      Finish{StopToken: -1},
	}
}

// Step takes the token just generated and the text it added (the
// detokenizer's increment, possibly empty while it waits for the rest of a
// UTF-8 sequence). It returns the text now safe to show and, when
// generation ends with this token, the reason. The text of an EOS or stop
// token is not shown (unless include_stop_str_in_output); neither is a
// stop string or anything after it. Steps after the end return nothing.
func (c *StopChecker) Step(id int32, text string) (string, Finish) {
	if c.done.Reason != "" {
		return "", c.done
	}
	c.n++
	tokenStop := false
	switch {
	case c.maxTokens > 0 && c.n >= c.maxTokens:
		c.done.Reason = FinishLength
	case c.n < c.minTokens:
	case !c.ignoreEOS && slices.Contains(c.eos, id), slices.Contains(c.stopIDs, id):
		c.done.Reason, c.done.StopToken = FinishStop, id
		tokenStop = true
	}
	if tokenStop && !c.include {
		text = ""
	}
	old := len(c.pending)
	c.pending += text
	// vLLM checks stop strings only past min_tokens, and only for matches
	// that end in the text of a token past min_tokens.
	if c.n > c.minTokens && len(text) > 0 {
		if at, s := c.firstStop(old); s != "" {
			end := at
			if c.include {
				end += len(s)
			}
			out := c.pending[:end]
			c.pending = ""
			c.done = Finish{Reason: FinishStop, StopString: s, StopToken: -1}
			return out, c.done
		}
	}
	if c.done.Reason != "" {
		return c.Flush(), c.done
	}
	keep := c.heldBack()
	out := c.pending[:len(c.pending)-keep]
	c.pending = c.pending[len(c.pending)-keep:]
	return out, c.done
}

// firstStop finds the earliest stop string occurrence in pending that ends
// after byte old.
func (c *StopChecker) firstStop(old int) (int, string) {
	best, which := -1, ""
	for _, s := range c.stop {
		from := max(0, old-len(s)+1)
		i := strings.Index(c.pending[from:], s)
		if i < 0 {
			continue
		}
		i += from
		if best < 0 || i < best || (i == best && len(s) > len(which)) {
			best, which = i, s
		}
	}
	return best, which
}

// heldBack is the length of the longest tail of pending that is a proper
// prefix of a stop string.
func (c *StopChecker) heldBack() int {
	keep := 0
	for _, s := range c.stop {
		for l := min(len(s)-1, len(c.pending)); l > keep; l-- {
			if strings.HasSuffix(c.pending, s[:l]) {
				keep = l
				break
			}
		}
	}
	return keep
}

// Flush returns the text held back, for an engine that ends generation for
// its own reasons (the context is full, the user aborted).
func (c *StopChecker) Flush() string {
	out := c.pending
	c.pending = ""
	return out
}

// Finished returns how generation ended, with an empty Reason while it goes
// on.
func (c *StopChecker) Finished() Finish { return c.done }
