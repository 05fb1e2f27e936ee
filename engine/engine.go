// Package engine runs generation requests on a model: prompt assembly
// (raw ids, text, or a chat rendered by the model's template), prefill in
// chunks, the decode loop with the sampler, stop conditions, streaming
// text, and KV-cache prefix reuse across requests (multi-turn chats
// prefill only their new tokens; a model with recurrent state reuses it
// only where it is exact, recurrent.go).
//
// What comes back from the backend per token is what the sampler needs:
// the argmax's 4 bytes for plain greedy decoding, the top-k candidates when
// the request's processors allow it (the sampler proves the result equals
// the full row's: sampler.SampleCandidates), and the full row only
// otherwise. With a grammar the mask is computed on the host before the
// step's forward pass and applied where the logits are
// (model.LogitMasker), then the sampler's processors follow in vLLM's
// order; a grammar that has ended stops the request, and one that nothing
// can continue (or whose tokens the other processors all removed) ends it
// with finish reason grammar_dead_end.
//
// A request may ask for speculative decoding with the model's own
// NextN/MTP block (Request.Speculative, speculative.go): drafts verified by
// one forward, the recurrent state rolled back to the accepted tokens;
// greedy and seeded sampled output are what they are without it, and the
// usage counts the drafted and accepted tokens.
//
// A chat model's thinking block stays outside the constraint
// (grammar.WithReasoning, when the template has one and the prompt did not
// close it); package api splits the reply's thinking from its answer.
package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"wasmllm/grammar"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
)

// Options configure an Engine.
type Options struct {
	// Context is the KV cache capacity in tokens; 0 means the model's
	// maximum, capped at 4096.
	Context int
	// PrefillChunk bounds the tokens per prefill batch (default: the
	// backend's model.PrefillChunker, or 128).
	PrefillChunk int
	// KVDType is the type the KV cache stores: F32 (the zero value), F16
	// (half the memory and bandwidth; about 1e-3 relative error in the
	// attention) or model.KVQ8 (8-bit values with a scale per block of 32:
	// 28% of F32's bytes for heads of 128; stories260K's perplexity within
	// 0.3% of F32's, TestPerplexityKV). A backend without typed caches
	// (no model.KVCacheAllocator) keeps F32: Engine.KVDType reports the
	// type used.
	KVDType loader.DType
}

// Engine holds a model, its tokenizer and one KV cache.
type Engine struct {
	Model *model.Model
	Tok   *tokenizer.Tokenizer
	opts  Options

	cache  model.KVCache
	cached []int32 // tokens whose keys and values are in the cache, in order

	argmax   model.Tensor // (1) i32
	topIDs   model.Tensor // (1, k) i32
	topVals  model.Tensor // (1, k) f32
	topK     int
	row      []float32
	cands    []int32
	candVals []float32

	vocab   *grammar.Vocab               // the tokenizer as grammars see it, built on first use
	wrapped map[wrapKey]*grammar.Grammar // grammars with a thinking block before them
	maskT   model.Tensor                 // (ceil(V/32)) i32: a constrained step's token mask
	maskI32 []int32

	next   *ahead             // the decode step submitted ahead of its input's readback (pipeline.go)
	behind *model.HybridCache // a recurrent model's states before that step (pipeline.go)

	ckpt *checkpoint // a recurrent model's state at the last prompt's last token (recurrent.go)

	spec   *specRun      // the speculative request under way (speculative.go)
	mcache model.KVCache // the NextN/MTP block's KV cache, made on first use
	// draftsFor, when set (by tests), replaces the block's drafts after
	// the tokens seq: an oracle whose drafts the model accepts as often as
	// a test needs (a random block's almost never are).
	draftsFor func(seq, drafts []int32) []int32

	// Stats counts the engine's host-side traffic since New.
	Stats Stats
}

// Stats counts readbacks: what the sampler needed from the backend.
type Stats struct {
	ReadbackBytes int64
	FullRows      int64
	// MaskBytes counts structured output's token masks sent to the backend.
	MaskBytes int64
	// DecodeSteps counts the decode loop's samples; StepsAhead the decode
	// steps submitted before the previous step's token was read back
	// (pipelined decode, pipeline.go).
	DecodeSteps, StepsAhead int64
	// DraftedTokens and AcceptedTokens count speculative decoding's drafts
	// and those accepted; SpecRerunTokens the tokens run again to roll a
	// recurrent state back to the accepted ones (speculative.go).
	DraftedTokens, AcceptedTokens, SpecRerunTokens int64
}

// New returns an Engine for m. tok may be nil for raw-id requests only.
func New(m *model.Model, tok *tokenizer.Tokenizer, opts Options) (*Engine, error) {
	if opts.Context <= 0 {
		opts.Context = m.Config.MaxContext
		if opts.Context <= 0 || opts.Context > 4096 {
			opts.Context = 4096
		}
	}
	if opts.PrefillChunk <= 0 {
		opts.PrefillChunk = 128
		if pc, ok := m.Backend().(model.PrefillChunker); ok && pc.PrefillChunk() > 0 {
			opts.PrefillChunk = pc.PrefillChunk()
		}
	}
	cache, err := m.NewCacheOf(opts.KVDType, opts.Context)
	if err != nil {
		return nil, err
	}
	b := m.Backend()
	return &Engine{
		Model: m, Tok: tok, opts: opts, cache: cache,
		argmax: b.NewI32(1),
		row:    make([]float32, m.Config.Vocab),
	}, nil
}

// Context is the KV cache capacity.
func (e *Engine) Context() int { return e.opts.Context }

// PrefillChunk is the most prompt tokens one prefill batch runs.
func (e *Engine) PrefillChunk() int { return e.opts.PrefillChunk }

// KVDType is the type the KV cache stores: Options.KVDType, or F32 where
// the backend has no F16 cache.
func (e *Engine) KVDType() loader.DType { return model.KVDTypeOf(e.cache) }

// Cache is the engine's KV cache, for statistics (its size, its type):
// CheckParams readies p for this model as Generate does first: its
// bad_words tokenized into BadWordIDs (unless set), then every parameter
// validated against the vocabulary. A caller that must refuse a request
// before it starts (the server, before its status line) calls it too.
func (e *Engine) CheckParams(p *sampler.Params) error {
	if len(p.BadWords) > 0 && p.BadWordIDs == nil {
		if e.Tok == nil {
			return ErrNoTokenizer
		}
		ids, err := sampler.TokenizeBadWords(p.BadWords, func(s string) ([]int32, error) {
			return e.Tok.Encode(s, false)
		})
		if err != nil {
			return err
		}
		p.BadWordIDs = ids
	}
	return p.Validate(e.Model.Config.Vocab)
}

// Generate owns its contents.
func (e *Engine) Cache() model.KVCache { return e.cache }

// Reset forgets the cached prefix.
func (e *Engine) Reset() { e.cached = e.cached[:0] }

// Overflow policies for prompts that do not fit the context.
const (
	OverflowError    = "error"    // return a *ContextError
	OverflowTruncate = "truncate" // drop the oldest turns (chat) or tokens (raw)
)

// Request is one generation request. Exactly one of Tokens, Prompt and
// Messages is set.
type Request struct {
	Tokens   []int32               // raw ids, used as given (no BOS added)
	Prompt   string                // text; BOS is added when the model's tokenizer says so
	Messages []tokenizer.Message   // a chat, rendered with the model's template
	Chat     tokenizer.ChatOptions // template variables (tools, enable_thinking...)
	Params   sampler.Params
	// Grammar, when set, constrains the generated text to its language
	// (structured output): each step allows only the tokens that keep the
	// text inside it, EOS only where it may end, and the request ends when
	// nothing can follow.
	Grammar *grammar.Grammar
	// FitGrammar makes a constrained reply end within the tokens it may
	// have (Params.MaxTokens and the context): once few are left, only
	// tokens after which the grammar can still end in the rest are
	// allowed, so the reply closes its strings and structures early and
	// ends whole, where without it it is cut at max_tokens.
	FitGrammar bool
	// Overflow is OverflowError (default) or OverflowTruncate.
	Overflow string
	// Speculative, when set, drafts tokens with the model's own draft
	// block and verifies them in one forward (speculative.go).
	Speculative *Speculative
	// SpecialAsText reads special tokens written in Prompt ("<s>") as
	// plain text, as SentencePiece does; by default they are the special
	// tokens, as in Hugging Face and llama.cpp (parse_special). Chat
	// templates always render them as special tokens.
	SpecialAsText bool
}

// Token is one generated token as streamed.
type Token struct {
	ID          int32
	Text        string // text that became safe to show with this token
	Logprob     float32
	Rank        int
	TopLogprobs []sampler.TokenLogprob
	HasLogprobs bool
}

// Usage counts a request's tokens; CachedTokens of the prompt were reused
// from the previous request's cache and not prefilled again.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CachedTokens     int `json:"cached_tokens"`
	// DraftedTokens and AcceptedTokens count a speculative request's
	// drafts and those the model accepted (speculative.go).
	DraftedTokens  int `json:"drafted_tokens,omitempty"`
	AcceptedTokens int `json:"accepted_tokens,omitempty"`
}

// Result is the outcome of a request.
type Result struct {
	Prompt      []int32
	Tokens      []int32
	Text        string
	Finish      sampler.Finish
	Usage       Usage
	PrefillTime time.Duration
	DecodeTime  time.Duration
	// MaskTime is the time spent computing grammar masks (MaskSteps of them).
	MaskTime  time.Duration
	MaskSteps int
	// StepsAhead counts the decode steps submitted before the previous
	// token was read back (pipeline.go).
	StepsAhead int
}

// ContextError reports a prompt (plus the tokens asked for) that does not
// fit the context.
type ContextError struct {
	PromptTokens, MaxTokens, Context int
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("engine: prompt of %d tokens (+%d to generate) exceeds the context of %d tokens", e.PromptTokens, e.MaxTokens, e.Context)
}

// Unwrap lets errors.Is(err, model.ErrContextFull) match.
func (e *ContextError) Unwrap() error { return model.ErrContextFull }

// ErrNoTokenizer is returned for text requests on an engine without a tokenizer.
var ErrNoTokenizer = errors.New("engine: the model has no tokenizer; pass token ids")

// Generate runs req, calling emit for every generated token. It stops on
// the request's stop conditions, a full context, an error from emit, or
// ctx's cancellation (then it returns ctx.Err() with the result so far,
// and text still held back for a possible stop string or a partial
// character goes out in one more emit of the last token).
func (e *Engine) Generate(ctx context.Context, req *Request, emit func(Token) error) (*Result, error) {
	// A step still ahead when the request ends (a stop, a cancel, an
	// error) is discarded: a recurrent state goes back to the cached
	// tokens (pipeline.go).
	defer e.dropAhead()
	p := req.Params
	if err := e.CheckParams(&p); err != nil {
		return nil, err
	}
	if err := e.CheckSpeculative(req.Speculative, &p, req.Grammar != nil); err != nil {
		return nil, err
	}
	prompt, text, err := e.promptIDs(req)
	if err != nil {
		return nil, err
	}
	var eos []int32
	if e.Tok != nil {
		eos = e.Tok.EOS()
	}
	s, err := sampler.New(p, e.Model.Config.Vocab, eos, prompt)
	if err != nil {
		return nil, err
	}
	stop := sampler.NewStopChecker(&p, eos)
	res := &Result{Prompt: prompt}
	res.Usage.PromptTokens = len(prompt)

	var c *constraint
	if req.Grammar != nil {
		g, err := e.withReasoning(req, text)
		if err != nil {
			return res, err
		}
		left := -1 // tokens that may still end the request with a stop
		if req.FitGrammar {
			left = e.opts.Context - len(prompt) - 1
			if p.MaxTokens > 0 {
				left = min(left, p.MaxTokens-1)
			}
			left = max(left, 0)
		}
		if c, err = e.newConstraint(g, left); err != nil {
			return res, err
		}
		defer func() { res.MaskTime, res.MaskSteps = c.maskTime, c.steps }()
		if c.n == 0 {
			res.Finish = sampler.Finish{Reason: sampler.FinishGrammar, StopToken: -1}
			return res, nil
		}
	}
	// On WebGPU prefill only records and submits the GPU's work, which is
	// done once the first token's sample has read its result back: so
	// PrefillTime runs up to the first token (as llama.cpp's prompt eval
	// does), and DecodeTime from there.
	start := time.Now()
	var decodeStart time.Time
	ahead0 := e.Stats.StepsAhead
	defer func() {
		res.StepsAhead = int(e.Stats.StepsAhead - ahead0)
		if decodeStart.IsZero() {
			res.PrefillTime = time.Since(start)
		} else {
			res.DecodeTime = time.Since(decodeStart)
		}
		res.Usage.CompletionTokens = len(res.Tokens)
		res.Usage.TotalTokens = res.Usage.PromptTokens + res.Usage.CompletionTokens
	}()
	if req.Speculative != nil {
		if e.spec, err = e.newSpecRun(req.Speculative); err != nil {
			return res, err
		}
		defer func() { e.spec.free(e.Model.Backend()); e.spec = nil }()
	}
	logits, reused, err := e.prefill(ctx, prompt)
	res.Usage.CachedTokens = reused
	if err != nil {
		return res, err
	}
	var dec *tokenizer.Decoder
	if e.Tok != nil {
		dec = e.Tok.NewDecoder(tokenizer.DecodeOptions{SkipSpecial: true})
	}
	o := &output{e: e, res: res, stop: stop, dec: dec, emit: emit, p: &p, c: c}
	if e.spec != nil {
		return res, e.speculate(ctx, s, o, logits, &decodeStart, start)
	}
	for {
		var hostMask []uint32
		if c != nil {
			hostMask = e.applyMask(c, logits)
		}
		// Another token follows this one unless it stops the request.
		more := (p.MaxTokens <= 0 || len(res.Tokens)+1 < p.MaxTokens) && len(e.cached)+2 < e.opts.Context
		r, err := e.sample(s, logits, hostMask, more && c == nil)
		e.Stats.DecodeSteps++
		if decodeStart.IsZero() {
			decodeStart = time.Now()
			res.PrefillTime = decodeStart.Sub(start)
		}
		if c != nil {
			ok, err := c.accept(r.ID, err)
			if err != nil {
				return res, err
			}
			if !ok {
				res.Finish = sampler.Finish{Reason: sampler.FinishGrammar, StopToken: -1}
				return res, e.flushHeld(res, stop, dec, emit)
			}
		} else if err != nil {
			return res, err
		}
		if done, err := o.add(r, len(e.cached)); done || err != nil {
			return res, err
		}
		if err := ctx.Err(); err != nil {
			// Cancelled after this token: nothing stays held back (a
			// partial character, the start of a stop string), so every
			// token counted in the usage has its text out. The rest goes
			// out as this token's last piece.
			if ferr := e.flushHeld(res, stop, dec, emit); ferr != nil {
				return res, ferr
			}
			return res, err
		}
		if next, ok := e.forwardAhead(r.ID); ok {
			logits = next
		} else if logits, err = e.forward([]int32{r.ID}); err != nil {
			return res, err
		}
	}
}

// output is a request's per-token output: its result, stop conditions,
// text decoder and stream.
type output struct {
	e    *Engine
	res  *Result
	stop *sampler.StopChecker
	dec  *tokenizer.Decoder
	emit func(Token) error
	p    *sampler.Params
	c    *constraint
}

// add records and streams token r, which follows cached tokens in the
// cache: done when it ends the request (res.Finish is set).
func (o *output) add(r sampler.Result, cached int) (done bool, err error) {
	e, res, stop, dec, c := o.e, o.res, o.stop, o.dec, o.c
	res.Tokens = append(res.Tokens, r.ID)
	piece := ""
	if dec != nil {
		piece = dec.Add(r.ID)
	}
	show, fin := stop.Step(r.ID, piece)
	if fin.Reason == "" && c != nil {
		var err error
		if fin, err = e.finishConstraint(c); err != nil {
			return true, err
		}
		if fin.Reason != "" {
			show += stop.Flush()
		}
	}
	if fin.Reason == "" && cached+1 >= e.opts.Context {
		fin = sampler.Finish{Reason: sampler.FinishLength, StopToken: -1}
		show += stop.Flush()
	}
	if fin.Reason != "" && dec != nil && fin.StopString == "" && fin.StopToken < 0 {
		show += dec.Flush()
	}
	res.Text += show
	tok := Token{ID: r.ID, Text: show}
	if o.p.Logprobs != nil {
		tok.HasLogprobs, tok.Logprob, tok.Rank, tok.TopLogprobs = true, r.Logprob, r.Rank, r.Top
	}
	if err := o.emit(tok); err != nil {
		return true, err
	}
	if fin.Reason != "" {
		res.Finish = fin
		return true, nil
	}
	return false, nil
}

// flushHeld sends the text still held back (a stop string's possible
// start, a partial character) as the last token's last piece, so every
// token counted has its text out.
func (e *Engine) flushHeld(res *Result, stop *sampler.StopChecker, dec *tokenizer.Decoder, emit func(Token) error) error {
	rest := stop.Flush()
	if dec != nil {
		rest += dec.Flush()
	}
	if rest == "" || len(res.Tokens) == 0 {
		return nil
	}
	res.Text += rest
	return emit(Token{ID: res.Tokens[len(res.Tokens)-1], Text: rest})
}

// PromptIDs returns the token ids the request's prompt becomes, after the
// overflow policy.
func (e *Engine) PromptIDs(req *Request) ([]int32, error) {
	ids, _, err := e.promptIDs(req)
	return ids, err
}

// promptIDs assembles the request's prompt and applies the overflow
// policy. For a chat it also returns the rendered text.
func (e *Engine) promptIDs(req *Request) ([]int32, string, error) {
	// A prompt fits when at least one token can follow it. Truncation
	// keeps room for max_tokens, up to half the context.
	reserve := min(max(req.Params.MaxTokens, 1), e.opts.Context/2)
	target := e.opts.Context - max(reserve, 1)
	fits := func(n int) bool { return n > 0 && n <= target }
	var ids []int32
	var rendered string
	switch {
	case req.Tokens != nil:
		ids = req.Tokens
	case req.Messages != nil:
		if e.Tok == nil {
			return nil, "", ErrNoTokenizer
		}
		msgs := req.Messages
		for {
			chatOpts := req.Chat
			chatOpts.AddGenerationPrompt = true
			text, err := e.Tok.RenderChat(msgs, chatOpts)
			if err != nil {
				return nil, "", err
			}
			if ids, err = e.Tok.Encode(text, false); err != nil {
				return nil, "", err
			}
			rendered = text
			if fits(len(ids)) || req.Overflow != OverflowTruncate {
				break
			}
			// Drop the oldest turn after any system message; keep the last.
			first := 0
			if len(msgs) > 0 && msgs[0].Role == "system" {
				first = 1
			}
			if len(msgs)-first <= 1 {
				break
			}
			msgs = append(append([]tokenizer.Message(nil), msgs[:first]...), msgs[first+1:]...)
		}
	default:
		if e.Tok == nil {
			return nil, "", ErrNoTokenizer
		}
		var err error
		if ids, err = e.Tok.EncodeOpts(req.Prompt, tokenizer.EncodeOptions{AddSpecial: true, SpecialAsText: req.SpecialAsText}); err != nil {
			return nil, "", err
		}
	}
	if len(ids) == 0 {
		return nil, "", errors.New("engine: empty prompt")
	}
	if req.Overflow == OverflowTruncate && req.Messages == nil && len(ids) > target && target > 0 {
		ids = ids[len(ids)-target:]
	}
	if len(ids) >= e.opts.Context || (req.Overflow == OverflowTruncate && len(ids) > target) {
		return nil, "", &ContextError{PromptTokens: len(ids), MaxTokens: req.Params.MaxTokens, Context: e.opts.Context}
	}
	return ids, rendered, nil
}
