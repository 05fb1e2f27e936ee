package api

import (
	"strings"

	"wasmllm/engine"
)

// reasoningSplitter separates a reply's thinking from its answer as the
// text streams, as vLLM's reasoning parsers do: the block's markers are
// dropped, the thinking's leading newline and the blanks after the block
// too, and text that may still turn into a marker is held back until it
// is decided.
type reasoningSplitter struct {
	state int // 0: may open a block; 1: in the block; 2: the answer
	held  string
	fresh bool // nothing of the current part shown yet (leading blanks to drop)
}

// newReasoningSplitter starts a splitter for a reply in mode m.
func newReasoningSplitter(m engine.ReasoningMode) *reasoningSplitter {
	s := &reasoningSplitter{state: 2}
	switch m {
	case engine.ReasoningOptional:
		s.state = 0
	case engine.ReasoningOpened:
		s.state, s.fresh = 1, true
	}
	return s
}

// Add takes the next text and returns the thinking and answer it
// completes. A nil splitter passes everything through as answer.
func (s *reasoningSplitter) Add(text string) (reasoning, content string) {
	if s == nil {
		return "", text
	}
	s.held += text
	for {
		switch s.state {
		case 0:
			t := strings.TrimLeft(s.held, " \t\r\n")
			if strings.HasPrefix(t, engine.ThinkStart) {
				s.held, s.state, s.fresh = t[len(engine.ThinkStart):], 1, true
				continue
			}
			if strings.HasPrefix(engine.ThinkStart, t) {
				return reasoning, content // still undecided
			}
			s.state = 2
			continue
		case 1:
			if s.fresh {
				s.held = strings.TrimLeft(s.held, "\n")
				if s.held == "" {
					return reasoning, content
				}
				s.fresh = false
			}
			if i := strings.Index(s.held, engine.ThinkEnd); i >= 0 {
				reasoning += s.held[:i]
				s.held, s.state, s.fresh = s.held[i+len(engine.ThinkEnd):], 2, true
				continue
			}
			keep := partialSuffix(s.held, engine.ThinkEnd)
			reasoning += s.held[:len(s.held)-keep]
			s.held = s.held[len(s.held)-keep:]
			return reasoning, content
		default:
			if s.fresh {
				s.held = strings.TrimLeft(s.held, " \t\r\n")
				if s.held == "" {
					return reasoning, content
				}
				s.fresh = false
			}
			content += s.held
			s.held = ""
			return reasoning, content
		}
	}
}

// Flush returns what is still held back at the end of the reply: an
// undecided start is answer, a partial marker inside the block thinking.
func (s *reasoningSplitter) Flush() (reasoning, content string) {
	if s == nil {
		return "", ""
	}
	h := s.held
	s.held = ""
	if s.state == 1 {
		return h, ""
	}
	return "", h
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of marker.
func partialSuffix(s, marker string) int {
	for n := min(len(s), len(marker)-1); n > 0; n-- {
		if strings.HasSuffix(s, marker[:n]) {
			return n
		}
	}
	return 0
}
