package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"wasmllm/engine"
	"wasmllm/grammar"
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
//
// A stream's first chunk is sent with the first token, so that a request
// that fails before generating anything (a bad prompt, a template error,
// a prompt that does not fit) fails with no chunk sent: the page's
// create() rejects instead of handing out a stream that throws. With
// r.N > 1 the choices are generated one after another (index 0, 1, ...),
// choice i with seed+i when a seed is given; an abort ends the remaining
// choices at once with finish_reason "abort". With r.IncludeUsage the
// stream ends with a chunk holding usage and no choices.
func (rn *Runner) Run(ctx context.Context, r *Request, emit func(any) error) (any, error) {
	if rn.Engine == nil {
		return nil, Errorf(CodeNotLoaded, "no model is loaded")
	}
	if r.Kind == KindChat && rn.Engine.Tok != nil && rn.Engine.Tok.ChatTemplate() == "" {
		return nil, &Error{Code: CodeNoChatTemplate, Message: "the model has no chat template; use completions.create with a prompt"}
	}
	if err := Prepare(ctx, rn.Engine, r); err != nil {
		return nil, err
	}
	now, newID := rn.Now, rn.NewID
	if now == nil {
		now = time.Now
	}
	if newID == nil {
		newID = randomID
	}
	prefix := "cmpl-"
	if r.Kind == KindChat {
		prefix = "chatcmpl-"
	}
	id, created := newID(prefix), now().Unix()
	n := max(r.N, 1)
	var (
		results []*engine.Result
		choices []any // non-streaming: each choice's response
		aborted bool
	)
	for i := 0; i < n; i++ {
		var s stream
		if r.Kind == KindChat {
			s = newChatStream(r, rn, id, created, i)
		} else {
			s = &textStream{r: r, rn: rn, id: id, created: created, index: i}
		}
		started := false
		open := func() error {
			if started || !r.Stream {
				return nil
			}
			started = true
			if c := s.start(); c != nil {
				return emit(c)
			}
			return nil
		}
		res := &engine.Result{}
		if !aborted {
			req := r.Engine
			if p := req.Params.Seed; i > 0 && p != nil && *p >= 0 {
				seed := *p + int64(i)
				req.Params.Seed = &seed
			}
			var err error
			res, err = rn.Engine.Generate(ctx, &req, func(t engine.Token) error {
				if err := open(); err != nil {
					return err
				}
				if !r.Stream {
					s.token(&t)
					return nil
				}
				for _, c := range s.token(&t) {
					if err := emit(c); err != nil {
						return err
					}
				}
				return nil
			})
			aborted = err != nil && res != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
			var le *grammar.LimitError
			if errors.As(err, &le) && r.constraintParam() != "" {
				// The grammar outgrew the matcher's bounds while it ran.
				return nil, paramError(r.constraintParam(), err)
			}
			if err != nil && !aborted {
				return nil, Classify(err)
			}
		}
		results = append(results, res)
		final := s.finish(res, aborted)
		if r.Stream {
			if err := open(); err != nil {
				return nil, err
			}
			for _, c := range append(s.flush(), final) {
				if err := emit(c); err != nil {
					return nil, err
				}
			}
		} else {
			choices = append(choices, final)
		}
	}
	u, tm := combine(results)
	rn.Last = tm
	if r.Stream {
		if !r.IncludeUsage {
			return nil, nil
		}
		var c any
		if r.Kind == KindChat {
			c = &ChatCompletion{ID: id, Object: ObjectChatCompletionChunk, Created: created, Model: rn.Model, Choices: []ChatChoice{}, Usage: u, Timings: tm}
		} else {
			c = &TextCompletion{ID: id, Object: ObjectTextCompletion, Created: created, Model: rn.Model, Choices: []TextChoice{}, Usage: u, Timings: tm}
		}
		return nil, emit(c)
	}
	if r.Kind == KindChat {
		out := &ChatCompletion{ID: id, Object: ObjectChatCompletion, Created: created, Model: rn.Model, Usage: u, Timings: tm}
		for _, c := range choices {
			out.Choices = append(out.Choices, c.(*ChatCompletion).Choices...)
		}
		return out, nil
	}
	out := &TextCompletion{ID: id, Object: ObjectTextCompletion, Created: created, Model: rn.Model, Usage: u, Timings: tm}
	for _, c := range choices {
		out.Choices = append(out.Choices, c.(*TextCompletion).Choices...)
	}
	return out, nil
}

// combine is the usage and timings of a request's choices: the prompt
// (and its cached part) counted once, as OpenAI counts it, the completion
// tokens and the times added up.
func combine(results []*engine.Result) (*Usage, *Timings) {
	var sum engine.Result
	for i, res := range results {
		if i == 0 {
			sum.Usage.PromptTokens, sum.Usage.CachedTokens = res.Usage.PromptTokens, res.Usage.CachedTokens
		}
		sum.Usage.CompletionTokens += res.Usage.CompletionTokens
		sum.Usage.DraftedTokens += res.Usage.DraftedTokens
		sum.Usage.AcceptedTokens += res.Usage.AcceptedTokens
		sum.PrefillTime += res.PrefillTime
		sum.DecodeTime += res.DecodeTime
		sum.StepsAhead += res.StepsAhead
	}
	sum.Usage.TotalTokens = sum.Usage.PromptTokens + sum.Usage.CompletionTokens
	tm := TimingsOf(&sum)
	if len(results) > 1 {
		// Every choice prefills at least its last prompt token again.
		tm.PrefillTokens = 0
		for _, res := range results {
			tm.PrefillTokens += res.Usage.PromptTokens - res.Usage.CachedTokens
		}
		tm.PrefillPerSecond = 0
		if tm.PrefillMS > 0 {
			tm.PrefillPerSecond = float64(tm.PrefillTokens) / tm.PrefillMS * 1000
		}
		tm.DecodePerSecond = 0
		if d := tm.DecodeTokens - len(results); d > 0 && tm.DecodeMS > 0 {
			tm.DecodePerSecond = float64(d) / tm.DecodeMS * 1000
		}
	}
	return UsageOf(sum.Usage), tm
}

// stream builds one choice's response objects.
type stream interface {
	start() any // the opening chunk, or nil for none
	// token takes the next token and returns the chunks it completes (a
	// stream's), possibly none.
	token(t *engine.Token) []any
	// flush returns a stream's chunks still held back at the end.
	flush() []any
	// finish returns the closing chunk of a stream (finish_reason and
	// this choice's timings), or a response holding this one choice.
	finish(res *engine.Result, aborted bool) any
}

type textStream struct {
	r       *Request
	rn      *Runner
	id      string
	created int64
	index   int
	text    []byte
	lps     *TextLogprobs
}

func (s *textStream) chunk(c TextChoice) *TextCompletion {
	c.Index = s.index
	return &TextCompletion{ID: s.id, Object: ObjectTextCompletion, Created: s.created, Model: s.rn.Model, Choices: []TextChoice{c}}
}

// start sends nothing: OpenAI's completion streams begin with text.
func (s *textStream) start() any { return nil }

func (s *textStream) token(t *engine.Token) []any {
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
	return []any{s.chunk(TextChoice{Text: t.Text, Logprobs: one})}
}

func (s *textStream) flush() []any { return nil }

func (s *textStream) finish(res *engine.Result, aborted bool) any {
	fr := finishReason(res, aborted)
	if s.r.Stream {
		c := s.chunk(TextChoice{FinishReason: &fr})
		c.Timings = TimingsOf(res)
		return c
	}
	c := s.chunk(TextChoice{Text: string(s.text), FinishReason: &fr})
	if s.r.Logprobs {
		c.Choices[0].Logprobs = s.lps
		if c.Choices[0].Logprobs == nil {
			c.Choices[0].Logprobs = &TextLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
		}
	}
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
