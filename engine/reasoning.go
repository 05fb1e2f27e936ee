package engine

import "strings"

// ReasoningMode is where a chat model's thinking block (Qwen3's and
// DeepSeek-R1's <think>...</think>) stands at the start of a reply.
type ReasoningMode uint8

const (
	// ReasoningNone: no block (a template without one, a prompt that
	// closed it as Qwen3's enable_thinking false does, or no chat).
	ReasoningNone ReasoningMode = iota
	// ReasoningOptional: the reply may open a block (Qwen3).
	ReasoningOptional
	// ReasoningOpened: the prompt opened the block, the reply starts in
	// it (DeepSeek-R1-Distill's forced "<think>\n").
	ReasoningOpened
)

// reasoningOf reads the mode from a rendered chat prompt.
func (e *Engine) reasoningOf(prompt string) ReasoningMode {
	if e.Tok == nil || !strings.Contains(e.Tok.ChatTemplate(), thinkStart) {
		return ReasoningNone
	}
	i, j := strings.LastIndex(prompt, thinkStart), strings.LastIndex(prompt, thinkEnd)
	switch {
	case i > j:
		return ReasoningOpened
	case j >= 0 && strings.TrimSpace(prompt[j+len(thinkEnd):]) == "":
		return ReasoningNone
	}
	return ReasoningOptional
}

// Reasoning is the mode of a chat request's reply (ReasoningNone for
// other requests), read from its rendered prompt: the template is rendered
// (not tokenized) once more; overflow truncation only drops old turns, so
// the prompt's end, which decides, is the same.
func (e *Engine) Reasoning(req *Request) (ReasoningMode, error) {
	if req.Messages == nil || e.Tok == nil {
		return ReasoningNone, nil
	}
	opts := req.Chat
	opts.AddGenerationPrompt = true
	text, err := e.Tok.RenderChat(req.Messages, opts)
	if err != nil {
		return ReasoningNone, err
	}
	return e.reasoningOf(text), nil
}

// ReasoningSplitter separates a reply's thinking from its answer as the
// text streams, as vLLM's reasoning parsers do: the block's markers are
// dropped, the thinking's leading newline and the blanks after the block
// too, and text that may still turn into a marker is held back until it
// is decided.
type ReasoningSplitter struct {
	state int // 0: may open a block; 1: in the block; 2: the answer
	held  string
	fresh bool // nothing of the current part shown yet (leading blanks to drop)
}

// NewReasoningSplitter starts a splitter for a reply in mode m.
func NewReasoningSplitter(m ReasoningMode) *ReasoningSplitter {
	s := &ReasoningSplitter{state: 2}
	switch m {
	case ReasoningOptional:
		s.state = 0
	case ReasoningOpened:
		s.state, s.fresh = 1, true
	}
	return s
}

// Add takes the next text and returns the thinking and answer it
// completes. A nil splitter passes everything through as answer.
func (s *ReasoningSplitter) Add(text string) (reasoning, content string) {
	if s == nil {
		return "", text
	}
	s.held += text
	for {
		switch s.state {
		case 0:
			t := strings.TrimLeft(s.held, " \t\r\n")
			if strings.HasPrefix(t, thinkStart) {
				s.held, s.state, s.fresh = t[len(thinkStart):], 1, true
				continue
			}
			if strings.HasPrefix(thinkStart, t) {
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
			if i := strings.Index(s.held, thinkEnd); i >= 0 {
				reasoning += s.held[:i]
				s.held, s.state, s.fresh = s.held[i+len(thinkEnd):], 2, true
				continue
			}
			keep := partialSuffix(s.held, thinkEnd)
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
func (s *ReasoningSplitter) Flush() (reasoning, content string) {
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
