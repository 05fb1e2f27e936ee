package engine

import "strings"

// The thinking block of Qwen3 and DeepSeek-R1 chat models.
const (
	ThinkStart = "<think>"
	ThinkEnd   = "</think>"
)

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
	if e.Tok == nil || !strings.Contains(e.Tok.ChatTemplate(), ThinkStart) {
		return ReasoningNone
	}
	i, j := strings.LastIndex(prompt, ThinkStart), strings.LastIndex(prompt, ThinkEnd)
	switch {
	case i > j:
		return ReasoningOpened
	case j >= 0 && strings.TrimSpace(prompt[j+len(ThinkEnd):]) == "":
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
