package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"wasmllm/engine"
)

// Runner answers requests with one engine, one at a time.
type Runner struct {
	Engine *engine.Engine
	// Model is the model name put in responses.
	Model string
	// Now and NewID default to the clock and random ids; tests fix them.
	Now   func() time.Time
	NewID func(prefix string) string
	// Last holds the timings of the last finished request.
	Last *Timings
}

// Run answers r. When r.Stream is set, every chunk goes to emit and the
// returned value is nil; otherwise emit is not called and the returned
// value is the whole response. A request aborted through ctx ends
// normally with finish_reason "abort" and what was generated so far.
func (rn *Runner) Run(ctx context.Context, r *Request, emit func(any) error) (any, error) {
	if rn.Engine == nil {
		return nil, Errorf(CodeNotLoaded, "no model is loaded")
	}
	if r.Kind == KindChat && rn.Engine.Tok != nil && rn.Engine.Tok.ChatTemplate() == "" {
		return nil, &Error{Code: CodeNoChatTemplate, Message: "the model has no chat template; use completions.create with a prompt"}
	}
	now, newID := rn.Now, rn.NewID
	if now == nil {
		now = time.Now
	}
	if newID == nil {
		newID = randomID
	}
	var s stream
	if r.Kind == KindChat {
		s = &chatStream{r: r, rn: rn, id: newID("chatcmpl-"), created: now().Unix()}
	} else {
		s = &textStream{r: r, rn: rn, id: newID("cmpl-"), created: now().Unix()}
	}
	if c := s.start(); r.Stream && c != nil {
		if err := emit(c); err != nil {
			return nil, err
		}
	}
	res, err := rn.Engine.Generate(ctx, &r.Engine, func(t engine.Token) error {
		if c := s.token(&t); c != nil && r.Stream {
			return emit(c)
		}
		return nil
	})
	aborted := err != nil && res != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
	if err != nil && !aborted {
		return nil, Classify(err)
	}
	rn.Last = TimingsOf(res)
	final := s.finish(res, aborted)
	if r.Stream {
		return nil, emit(final)
	}
	return final, nil
}

// stream builds one request's response objects.
type stream interface {
	start() any                // the opening chunk, or nil for none
	token(t *engine.Token) any // nil when there is nothing to send
	finish(res *engine.Result, aborted bool) any
}

type chatStream struct {
	r       *Request
	rn      *Runner
	id      string
	created int64
	text    []byte
	lps     []TokenLogprob
}

func (s *chatStream) chunk(c ChatChoice) *ChatCompletion {
	return &ChatCompletion{ID: s.id, Object: ObjectChatCompletionChunk, Created: s.created, Model: s.rn.Model, Choices: []ChatChoice{c}}
}

func (s *chatStream) start() any {
	return s.chunk(ChatChoice{Delta: &ChatMessage{Role: "assistant", Content: strp("")}})
}

func (s *chatStream) token(t *engine.Token) any {
	s.text = append(s.text, t.Text...)
	var lp *ChatLogprobs
	if s.r.Logprobs && t.HasLogprobs {
		e := chatLogprob(s.rn.Engine.Tok, t)
		s.lps = append(s.lps, e)
		lp = &ChatLogprobs{Content: []TokenLogprob{e}}
	}
	if t.Text == "" && lp == nil {
		return nil
	}
	return s.chunk(ChatChoice{Delta: &ChatMessage{Content: strp(t.Text)}, Logprobs: lp})
}

func (s *chatStream) finish(res *engine.Result, aborted bool) any {
	fr := finishReason(res, aborted)
	u, tm := UsageOf(res.Usage), TimingsOf(res)
	if s.r.Stream {
		c := s.chunk(ChatChoice{Delta: &ChatMessage{}, FinishReason: &fr})
		c.Usage, c.Timings = u, tm
		return c
	}
	c := &ChatCompletion{ID: s.id, Object: ObjectChatCompletion, Created: s.created, Model: s.rn.Model, Usage: u, Timings: tm,
		Choices: []ChatChoice{{Message: &ChatMessage{Role: "assistant", Content: strp(string(s.text))}, FinishReason: &fr}}}
	if s.r.Logprobs {
		c.Choices[0].Logprobs = &ChatLogprobs{Content: append([]TokenLogprob{}, s.lps...)}
	}
	return c
}

type textStream struct {
	r       *Request
	rn      *Runner
	id      string
	created int64
	text    []byte
	lps     *TextLogprobs
}

func (s *textStream) chunk(c TextChoice) *TextCompletion {
	return &TextCompletion{ID: s.id, Object: ObjectTextCompletion, Created: s.created, Model: s.rn.Model, Choices: []TextChoice{c}}
}

// start sends nothing: OpenAI's completion streams begin with text.
func (s *textStream) start() any { return nil }

func (s *textStream) token(t *engine.Token) any {
	offset := utf16Len(s.text)
	s.text = append(s.text, t.Text...)
	var one *TextLogprobs
	if s.r.Logprobs && t.HasLogprobs {
		tok := s.rn.Engine.Tok
		top := map[string]float32{}
		for _, alt := range t.TopLogprobs {
			if _, dup := top[tokenString(tok, alt.ID)]; !dup {
				top[tokenString(tok, alt.ID)] = alt.Logprob
			}
		}
		one = &TextLogprobs{Tokens: []string{tokenString(tok, t.ID)}, TokenLogprobs: []float32{t.Logprob},
			TopLogprobs: []map[string]float32{top}, TextOffset: []int{offset}}
		if s.lps == nil {
			s.lps = &TextLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
		}
		s.lps.Tokens = append(s.lps.Tokens, one.Tokens...)
		s.lps.TokenLogprobs = append(s.lps.TokenLogprobs, one.TokenLogprobs...)
		s.lps.TopLogprobs = append(s.lps.TopLogprobs, one.TopLogprobs...)
		s.lps.TextOffset = append(s.lps.TextOffset, one.TextOffset...)
	}
	if t.Text == "" && one == nil {
		return nil
	}
	return s.chunk(TextChoice{Text: t.Text, Logprobs: one})
}

func (s *textStream) finish(res *engine.Result, aborted bool) any {
	fr := finishReason(res, aborted)
	u, tm := UsageOf(res.Usage), TimingsOf(res)
	if s.r.Stream {
		c := s.chunk(TextChoice{FinishReason: &fr})
		c.Usage, c.Timings = u, tm
		return c
	}
	c := s.chunk(TextChoice{Text: string(s.text), FinishReason: &fr})
	if s.r.Logprobs {
		c.Choices[0].Logprobs = s.lps
		if c.Choices[0].Logprobs == nil {
			c.Choices[0].Logprobs = &TextLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
		}
	}
	c.Usage, c.Timings = u, tm
	return c
}

func randomID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// utf16Len is the length of s in UTF-16 code units, as JavaScript counts
// string offsets.
func utf16Len(s []byte) int {
	n := 0
	for _, r := range string(s) {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}
