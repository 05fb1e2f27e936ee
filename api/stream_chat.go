package api

import (
	"wasmllm/engine"
	"wasmllm/sampler"
	"wasmllm/toolcall"
)

// chatStream is one chat choice's stream shaping: the reply's thinking
// (reasoningSplitter) goes out as reasoning_content, the answer after it
// through the tool-call parser as content and tool_calls deltas; a whole
// response is split and parsed once at the end.
type chatStream struct {
	r       *Request
	rn      *Runner
	id      string
	created int64
	index   int
	text    []byte
	lps     []TokenLogprob
	// parser reads a stream's tool calls as they come (nil when the
	// reply is all content, and for a whole response, which is parsed at
	// the end).
	parser *toolcall.StreamParser
	// split takes the thinking out of the reply.
	split *reasoningSplitter
}

// newChatStream starts choice index of r's reply: the thinking split out
// by r's reasoning mode, the answer read for tool calls as it streams when
// r's template writes them.
func newChatStream(r *Request, rn *Runner, id string, created int64, index int) *chatStream {
	s := &chatStream{r: r, rn: rn, id: id, created: created, index: index, split: newReasoningSplitter(r.reasoning)}
	if r.Stream && r.format != toolcall.None {
		s.parser = toolcall.NewStreamParser(r.format)
	}
	return s
}

func (s *chatStream) chunk(c ChatChoice) *ChatCompletion {
	c.Index = s.index
	return &ChatCompletion{ID: s.id, Object: ObjectChatCompletionChunk, Created: s.created, Model: s.rn.Model, Choices: []ChatChoice{c}}
}

func (s *chatStream) start() any {
	return s.chunk(ChatChoice{Delta: &ChatDelta{Role: "assistant", Content: strp("")}})
}

func (s *chatStream) token(t *engine.Token) []any {
	s.text = append(s.text, t.Text...)
	var lp *ChatLogprobs
	if s.r.Logprobs && t.HasLogprobs {
		e := chatLogprob(s.rn.Engine.Tok, t)
		s.lps = append(s.lps, e)
		lp = &ChatLogprobs{Content: []TokenLogprob{e}}
	}
	think, content := s.split.Add(t.Text)
	out := s.pieces(think, content)
	if lp != nil {
		// The token's logprobs go with the first chunk it completes, or
		// alone when its text is held back.
		if len(out) == 0 {
			out = []*ChatCompletion{s.chunk(ChatChoice{Delta: &ChatDelta{Content: strp("")}})}
		}
		out[0].Choices[0].Logprobs = lp
	}
	return chunks(out)
}

func (s *chatStream) flush() []any {
	out := s.pieces(s.split.Flush())
	if s.parser != nil {
		out = append(out, s.deltas(s.parser.Finish())...)
	}
	return chunks(out)
}

// pieces are the chunks of some thinking and some answer text: the
// answer through the tool-call parser when the reply is read for calls.
func (s *chatStream) pieces(think, content string) []*ChatCompletion {
	var out []*ChatCompletion
	if think != "" {
		out = append(out, s.chunk(ChatChoice{Delta: &ChatDelta{ReasoningContent: strp(think)}}))
	}
	if s.parser != nil {
		return append(out, s.deltas(s.parser.Add(content))...)
	}
	if content != "" {
		out = append(out, s.chunk(ChatChoice{Delta: &ChatDelta{Content: strp(content)}}))
	}
	return out
}

// deltas turns the tool-call parser's pieces into chunks, one each.
func (s *chatStream) deltas(ds []toolcall.Delta) []*ChatCompletion {
	var out []*ChatCompletion
	for _, d := range ds {
		if d.Call == nil {
			if d.Content != "" {
				out = append(out, s.chunk(ChatChoice{Delta: &ChatDelta{Content: strp(d.Content)}}))
			}
			continue
		}
		i := d.Call.Index
		tc := ToolCall{Index: &i, Function: ToolCallFunction{Arguments: d.Call.Arguments}}
		if d.Call.ID != "" {
			tc.ID, tc.Type, tc.Function.Name = d.Call.ID, "function", d.Call.Name
		}
		out = append(out, s.chunk(ChatChoice{Delta: &ChatDelta{ToolCalls: []ToolCall{tc}}}))
	}
	return out
}

func (s *chatStream) finish(res *engine.Result, aborted bool) any {
	fr := finishReason(res, aborted)
	if s.r.Stream {
		if s.parser != nil && s.parser.Calls() > 0 && fr == string(sampler.FinishStop) {
			fr = FinishToolCalls
		}
		c := s.chunk(ChatChoice{Delta: &ChatDelta{}, FinishReason: &fr})
		c.Timings = TimingsOf(res)
		return c
	}
	split := newReasoningSplitter(s.r.reasoning)
	think, answer := split.Add(string(s.text))
	t2, a2 := split.Flush()
	think, answer = think+t2, answer+a2
	msg := &ChatMessage{Role: "assistant", Content: strp(answer)}
	if s.r.reasoning != engine.ReasoningNone && think != "" {
		msg.ReasoningContent = strp(think)
	}
	if f := s.r.format; f != toolcall.None {
		content, calls := ToolCalls(f, answer, aborted || Cut(res.Finish))
		if len(calls) > 0 {
			msg.Content, msg.ToolCalls = content, calls
			if fr == string(sampler.FinishStop) {
				fr = FinishToolCalls
			}
		}
	}
	c := &ChatCompletion{ID: s.id, Object: ObjectChatCompletion, Created: s.created, Model: s.rn.Model,
		Choices: []ChatChoice{{Index: s.index, Message: msg, FinishReason: &fr}}}
	if s.r.Logprobs {
		c.Choices[0].Logprobs = &ChatLogprobs{Content: append([]TokenLogprob{}, s.lps...)}
	}
	return c
}

func chunks(cs []*ChatCompletion) []any {
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}
