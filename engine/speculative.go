package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"wasmllm/model"
	"wasmllm/sampler"
)

// Speculative decoding with the model's own NextN/MTP block (Qwen3.5,
// model.MTP), opt-in per request (Request.Speculative). Each round, with t
// the last token out (sampled, not yet in the cache, at position n):
//
//  1. Draft: the block runs the rows the trunk's last forward left it (each
//     token paired with the trunk's hidden row before it) ending with t, and
//     its last row's argmax is d1; then d2..dk one step each, every draft
//     paired with the block's own hidden row of the step before.
//  2. Verify: one trunk forward of [t, d1..dk] at n..n+k, logits and hidden
//     rows for every position.
//  3. Accept: row i's token y is sampled exactly as plain decoding samples
//     it, the sampler's history holding the accepted drafts before it (the
//     way vLLM's sampler takes spec token ids into its penalties); y = d(i+1)
//     accepts it and goes on, else y ends the round. With every draft
//     accepted the last row gives one more token.
//  4. Roll back: the cache keeps the keys and values of the accepted
//     tokens (the rest are overwritten later); the recurrent states, which
//     cannot be cut back, are restored from a checkpoint taken before the
//     verify and the accepted tokens run again, unless every row was used.
//
// Sampled requests: the drafts are the block's argmax, a point-mass draft
// distribution q, for which speculative sampling's rule (accept d with
// probability min(1, p(d)/q(d)) = p(d), else draw from max(0, p - q)
// renormalised, which is p without d) gives the same law as drawing y from
// p and accepting when y = d. That draw is the sampler's own, with the
// request's seeded stream, one per token out in the same order as without
// speculation: a seeded request gives the tokens it gives without it
// (given the same logits), and greedy output is plain greedy output.
//
// The rollback re-runs the accepted tokens instead of keeping per-token
// snapshots of every DeltaNet state inside the verify forward: no Backend
// change, and it costs a forward of the accepted tokens only in rounds
// that reject a draft (Stats.SpecRerunTokens counts them; TestSpeculative
// Greedy logs them against the tokens generated).

// Speculative is a request's speculative decoding (its "speculative"
// object): Method "mtp" drafts NumTokens tokens a round with the model's
// NextN/MTP block.
type Speculative struct {
	Method    string `json:"method"`
	NumTokens int    `json:"num_tokens"`
}

// MaxDraftTokens bounds Speculative.NumTokens.
const MaxDraftTokens = 16

// ErrSpeculative is wrapped by a *SpeculativeError.
var ErrSpeculative = errors.New("engine: speculative decoding")

// SpeculativeError reports a speculative request the engine cannot run,
// naming the field.
type SpeculativeError struct {
	Field  string // speculative.method, speculative.num_tokens, ...
	Value  any
	Reason string
}

func (e *SpeculativeError) Error() string {
	return fmt.Sprintf("engine: %s = %v: %s", e.Field, e.Value, e.Reason)
}

func (e *SpeculativeError) Unwrap() error { return ErrSpeculative }

// CheckSpeculative checks a request's speculative decoding against the
// model and the request's other parameters.
func (e *Engine) CheckSpeculative(sp *Speculative, p *sampler.Params, constrained bool) error {
	if sp == nil {
		return nil
	}
	switch {
	case sp.Method != "mtp":
		return &SpeculativeError{"speculative.method", sp.Method, `want "mtp"`}
	case sp.NumTokens < 1 || sp.NumTokens > MaxDraftTokens:
		return &SpeculativeError{"speculative.num_tokens", sp.NumTokens, fmt.Sprintf("want 1..%d", MaxDraftTokens)}
	case e.Model.MTP == nil:
		return &SpeculativeError{"speculative.method", sp.Method, "the model has no NextN/MTP block (load it with model.LoadOptions.MTP)"}
	case constrained:
		return &SpeculativeError{"speculative", "mtp", "not with structured output"}
	case p.Logprobs != nil:
		return &SpeculativeError{"speculative", "mtp", "not with logprobs"}
	}
	return nil
}

// specRun is one request's speculation: the block's cache and the rows
// the trunk left it.
type specRun struct {
	k      int
	mcache model.KVCache // the block's KV cache
	ckpt   *model.HybridCache
	// The rows the block has still to run: ids[j] at position pos+j with
	// the trunk's hidden row j of hidden (the one before it); the token
	// that ends them comes from the sampler.
	ids    []int32
	pos    int
	hidden model.Tensor
	rows   map[int]model.Tensor // (R, D) hidden rows kept off the trunk's scratch, by R
	h1     model.Tensor         // (1, D) a draft step's hidden
	row    model.Tensor         // (1, V) a draft step's logits
	drafts []int32
	last   model.Tensor // the hidden rows of the trunk's last prefill chunk
}

// newSpecRun readies e's block for a request.
func (e *Engine) newSpecRun(sp *Speculative) (*specRun, error) {
	m := e.Model
	if e.mcache == nil {
		c, err := m.MTP.NewCache(e.opts.Context + MaxDraftTokens + 1)
		if err != nil {
			return nil, err
		}
		e.mcache = c
	}
	r := &specRun{k: sp.NumTokens, mcache: e.mcache, rows: map[int]model.Tensor{}}
	if m.Recurrent() {
		r.ckpt = m.NewCheckpoint()
	}
	b := m.Backend()
	r.h1, r.row = b.NewF32(1, m.Config.Hidden), b.NewF32(1, m.Config.Vocab)
	return r, nil
}

// free releases the run's tensors.
func (r *specRun) free(b model.Backend) {
	for _, t := range r.rows {
		b.Free(t)
	}
	b.Free(r.h1)
	b.Free(r.row)
	if r.ckpt != nil {
		for i := range r.ckpt.Conv {
			b.Free(r.ckpt.Conv[i])
			b.Free(r.ckpt.State[i])
		}
	}
}

// keep copies rows [0, R) of the trunk's hidden rows h off its scratch.
func (r *specRun) keep(b model.Backend, h model.Tensor, R, D int) model.Tensor {
	t, ok := r.rows[R]
	if !ok {
		t = b.NewF32(R, D)
		r.rows[R] = t
	}
	b.CopyRows(t, h, 0)
	return t
}

// prefillChunk runs the block over a prompt chunk [start, end) the trunk
// just ran (its hidden rows h): the rows that pair prompt[p] with the
// hidden row p-1, for every p the chunk's hidden rows reach, the first
// prompt token with zeros. The last chunk's rows wait for the sampled
// token that ends them.
func (e *Engine) prefillChunk(prompt []int32, start, end int, h model.Tensor) error {
	r, m := e.spec, e.Model
	b, D := m.Backend(), m.Config.Hidden
	if start == 0 {
		zero := r.keep(b, h, 1, D)
		b.WriteF32(zero, make([]float32, D))
		if _, _, err := m.MTP.Forward(r.mcache, prompt[:1], zero, 0); err != nil {
			return err
		}
	}
	if end < len(prompt) {
		_, _, err := m.MTP.Forward(r.mcache, prompt[start+1:end+1], r.keep(b, h, end-start, D), start+1)
		return err
	}
	r.ids, r.pos, r.hidden = append(r.ids[:0], prompt[start+1:end]...), start+1, r.keep(b, h, end-start, D)
	return nil
}

// draft runs the block's pending rows ending with t and drafts n tokens.
func (e *Engine) draft(t int32, n int) ([]int32, error) {
	r, m := e.spec, e.Model
	b := m.Backend()
	ids := append(r.ids, t)
	logits, h, err := m.MTP.Forward(r.mcache, ids, r.hidden, r.pos)
	if err != nil {
		return nil, err
	}
	last := len(ids) - 1
	r.drafts = r.drafts[:0]
	pos := r.pos + last
	for s := range n {
		if s > 0 {
			if logits, h, err = m.MTP.Forward(r.mcache, r.drafts[s-1:s], r.h1, pos+s); err != nil {
				return nil, err
			}
			last = 0
		}
		b.CopyRows(r.row, logits, last)
		b.Argmax(e.argmax, r.row)
		var id [1]int32
		if err := b.ReadI32(e.argmax, id[:]); err != nil {
			return nil, err
		}
		e.Stats.ReadbackBytes += 4
		if id[0] < 0 {
			break // a NaN row: draft no further (the verify reports it)
		}
		r.drafts = append(r.drafts, id[0])
		b.CopyRows(r.h1, h, last)
	}
	if e.draftsFor != nil {
		r.drafts = e.draftsFor(append(slices.Clone(e.cached), t), r.drafts)
	}
	return r.drafts, nil
}

// speculate is Generate's decode loop with speculation (see above): logits
// are the prompt's last row.
func (e *Engine) speculate(ctx context.Context, s *sampler.Sampler, o *output, logits model.Tensor, decodeStart *time.Time, start time.Time) error {
	m, r, res := e.Model, e.spec, o.res
	b, V := m.Backend(), m.Config.Vocab
	p := s.Params()
	row := e.row
	started := func() {
		if decodeStart.IsZero() {
			*decodeStart = time.Now()
			res.PrefillTime = decodeStart.Sub(start)
		}
	}
	// The first token, from the prompt's logits.
	if err := b.ReadF32(logits, row); err != nil {
		return err
	}
	t, err := s.Sample(row)
	e.Stats.DecodeSteps++
	started()
	if err != nil {
		return err
	}
	if done, err := o.add(t, len(e.cached)); done || err != nil {
		return err
	}
	rows := make([]float32, (MaxDraftTokens+1)*V)
	for {
		if err := ctx.Err(); err != nil {
			if ferr := e.flushHeld(res, o.stop, o.dec, o.emit); ferr != nil {
				return ferr
			}
			return err
		}
		n := len(e.cached)
		// Drafts beyond what the request may still output or the context
		// hold would be wasted.
		k := min(r.k, e.opts.Context-n-2)
		if p.MaxTokens > 0 {
			k = min(k, p.MaxTokens-len(res.Tokens)-1)
		}
		k = max(k, 0)
		drafts, err := e.draft(t.ID, k)
		if err != nil {
			return err
		}
		res.Usage.DraftedTokens += len(drafts)
		e.Stats.DraftedTokens += int64(len(drafts))
		batch := append([]int32{t.ID}, drafts...)
		if r.ckpt != nil {
			m.SaveState(r.ckpt, e.cache.(*model.HybridCache))
		}
		e.dropAhead()
		vl, vh, err := m.ForwardHidden(e.cache, batch, n, true)
		if err != nil {
			return err
		}
		if err := b.ReadF32(vl, rows[:len(batch)*V]); err != nil {
			return err
		}
		e.Stats.ReadbackBytes += int64(4 * len(batch) * V)
		e.Stats.FullRows += int64(len(batch))
		// Accept: row j gives the token after batch[j].
		used, done := 0, false
		for j := range batch {
			copy(row, rows[j*V:(j+1)*V])
			y, err := s.Sample(row)
			e.Stats.DecodeSteps++
			if err != nil {
				return err
			}
			used = j
			if done, err = o.add(y, n+j+1); err != nil {
				return err
			}
			t = y
			if j < len(drafts) && y.ID == drafts[j] {
				res.Usage.AcceptedTokens++
				e.Stats.AcceptedTokens++
			}
			if done || j == len(drafts) || y.ID != drafts[j] {
				break
			}
		}
		// The cache keeps batch[:used+1]: the tokens before the last out.
		keep := used + 1
		r.ids, r.pos = append(r.ids[:0], batch[1:keep]...), n+1
		r.hidden = r.keep(b, vh, keep, m.Config.Hidden)
		if keep < len(batch) && r.ckpt != nil {
			m.RestoreState(e.cache.(*model.HybridCache), r.ckpt)
			if _, err := m.Forward(e.cache, batch[:keep], n, false); err != nil {
				return err
			}
			e.Stats.SpecRerunTokens += int64(keep)
		}
		e.cached = append(e.cached, batch[:keep]...)
		if done {
			return nil
		}
	}
}
