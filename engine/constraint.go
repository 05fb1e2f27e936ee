package engine

import (
	"errors"
	"time"

	"wasmllm/grammar"
	"wasmllm/model"
	"wasmllm/sampler"
)

// constraint is a request's grammar as the decode loop applies it: before
// each step the mask of allowed tokens is computed on the host and goes
// up as a bitmask (V/8 bytes) that the backend applies to the logits in
// place (model.LogitMasker), so Argmax, TopK and the full row all see the
// masked logits and a constrained greedy step still reads back 4 bytes.
// A backend without the capability gets the mask applied to the full row
// on the host.
type constraint struct {
	m     *grammar.Matcher
	v     *grammar.Vocab
	words []uint32
	n     int // tokens the current mask allows
	host  bool
	// left is the tokens this request may still take and end with a
	// stop, this step's included, when it fits the grammar into them
	// (Request.FitGrammar); -1 when it does not.
	left int

	maskTime time.Duration
	steps    int
}

// grammarVocab is the tokenizer's vocabulary as grammars see it, built once.
func (e *Engine) grammarVocab() *grammar.Vocab {
	if e.vocab == nil {
		tok := e.Tok
		e.vocab = grammar.NewVocab(e.Model.Config.Vocab, tok.Piece, tok.EOS(), tok.StripsLeadingSpace())
	}
	return e.vocab
}

func (e *Engine) newConstraint(g *grammar.Grammar, left int) (*constraint, error) {
	if e.Tok == nil {
		return nil, ErrNoTokenizer
	}
	v := e.grammarVocab()
	c := &constraint{m: g.NewMatcher(), v: v, words: make([]uint32, v.MaskWords()), left: left}
	if _, ok := e.Model.Backend().(model.LogitMasker); !ok {
		c.host = true
	}
	e.nextMask(c)
	if err := c.m.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// nextMask computes the mask for the coming step and, for a backend that
// applies it, writes it now: before the step's forward pass is recorded,
// so the upload joins that step's submit.
func (e *Engine) nextMask(c *constraint) {
	t0 := time.Now()
	if c.left >= 0 {
		c.n = c.m.MaskWithin(c.v, c.words, c.left)
	} else {
		c.n = c.m.Mask(c.v, c.words)
	}
	c.maskTime += time.Since(t0)
	c.steps++
	if c.host || c.n == 0 {
		return
	}
	b := e.Model.Backend()
	if e.maskT == nil {
		e.maskT = b.NewI32(len(c.words))
		e.maskI32 = make([]int32, len(c.words))
	}
	for i, w := range c.words {
		e.maskI32[i] = int32(w)
	}
	b.WriteI32(e.maskT, e.maskI32)
	e.Stats.MaskBytes += int64(4 * len(c.words))
}

// applyMask masks logits on the backend (or, for the host, returns the
// words the full row is masked with).
func (e *Engine) applyMask(c *constraint, logits model.Tensor) []uint32 {
	if c.host {
		return c.words
	}
	e.Model.Backend().(model.LogitMasker).MaskLogits(logits, e.maskT)
	return nil
}

// accept moves the grammar over the sampled token. It reports false when
// the token is not one the grammar allows (every allowed token was masked
// by the other processors): the request ends with FinishGrammar.
func (c *constraint) accept(id int32, err error) (bool, error) {
	if errors.Is(err, sampler.ErrAllMasked) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if c.m.AcceptToken(c.v, id) != nil {
		return false, c.m.Err()
	}
	if c.left > 0 {
		c.left--
	}
	return true, nil
}

// finish says whether the grammar ends the request after a token: it has
// ended (nothing can follow, or EOS was taken), or nothing it allows can
// come next. The error is the matcher's: the grammar outgrew its bounds
// (a *grammar.LimitError), which ends the request with it.
func (e *Engine) finishConstraint(c *constraint) (sampler.Finish, error) {
	if c.m.Done() {
		return sampler.Finish{Reason: sampler.FinishStop, StopToken: -1}, nil
	}
	e.nextMask(c)
	if err := c.m.Err(); err != nil {
		return sampler.Finish{}, err
	}
	if c.n == 0 {
		return sampler.Finish{Reason: sampler.FinishGrammar, StopToken: -1}, nil
	}
	return sampler.Finish{}, nil
}

type wrapKey struct {
	g      *grammar.Grammar
	opened bool
}

// withReasoning keeps a chat model's thinking block outside the request's
// grammar: when the model's template has one and the rendered prompt has
// not closed it (Qwen3 with enable_thinking off ends the prompt with an
// empty block), the grammar applies after </think>, and from the start
// of the text when the prompt opened the block itself (DeepSeek-R1's
// "<think>\n"). Wrapped grammars are kept per engine, so repeated
// requests share their masks: up to 16 of them, and maxWrappedBytes of
// their memory (their tables grow as they are used).
func (e *Engine) withReasoning(req *Request, prompt string) (*grammar.Grammar, error) {
	g := req.Grammar
	if req.Messages == nil {
		return g, nil
	}
	mode := e.reasoningOf(prompt)
	if mode == ReasoningNone {
		return g, nil
	}
	opened := mode == ReasoningOpened
	k := wrapKey{g, opened}
	if w, ok := e.wrapped[k]; ok {
		return w, nil
	}
	w, err := grammar.WithReasoning(g, grammar.Reasoning{Start: ThinkStart, End: ThinkEnd, Opened: opened})
	if err != nil {
		return nil, err
	}
	if e.wrapped == nil || len(e.wrapped) >= 16 || wrappedBytes(e.wrapped) > maxWrappedBytes {
		e.wrapped = map[wrapKey]*grammar.Grammar{}
	}
	e.wrapped[k] = w
	return w, nil
}

// maxWrappedBytes bounds the memory of an engine's wrapped grammars
// (grammar.Grammar.Bytes), as api.GrammarCacheBytes bounds the cache of
// the grammars they wrap.
const maxWrappedBytes = 128 << 20

func wrappedBytes(m map[wrapKey]*grammar.Grammar) int {
	n := 0
	for _, g := range m {
		n += g.Bytes()
	}
	return n
}
