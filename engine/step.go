package engine

import (
	"context"
	"errors"
	"math"
	"slices"

	"wasmllm/model"
	"wasmllm/sampler"
)

// prefill brings the cache to hold prompt, reusing the longest cached
// prefix, and returns the logits after its last token and how many tokens
// were reused.
func (e *Engine) prefill(ctx context.Context, prompt []int32) (model.Tensor, int, error) {
	common := commonPrefix(e.cached, prompt)
	recurrent := e.Model.Recurrent()
	if recurrent {
		// Where the recurrent state can start (recurrent.go); the KV
		// positions the new prefill overwrites leave the checkpoint stale.
		if common = e.recurrentStart(prompt, common); e.ckpt != nil && common < len(e.ckpt.ids) {
			e.ckpt = nil
		}
	} else if common == len(prompt) {
		common-- // the last prompt token must run again for its logits
	}
	e.cached = e.cached[:common]
	var logits model.Tensor
	last := len(prompt) - 1
	// The chunks are one pass over the prompt (LongRoPE picks its factors
	// by the pass's end, as Hugging Face's one forward does).
	e.Model.SetPassEnd(len(prompt))
	defer e.Model.SetPassEnd(0)
	for pos := common; pos < len(prompt); {
		if err := ctx.Err(); err != nil {
			return nil, common, err
		}
		if recurrent && pos == last {
			e.saveCheckpoint(prompt, last)
		}
		n := min(e.opts.PrefillChunk, len(prompt)-pos)
		if recurrent && pos < last {
			n = min(n, last-pos) // stop before the last token for the checkpoint
		}
		var err error
		if logits, err = e.forward(prompt[pos : pos+n]); err != nil {
			return nil, common, err
		}
		if e.spec != nil {
			if err := e.prefillChunk(prompt, pos, pos+n, e.spec.last); err != nil {
				return nil, common, err
			}
		}
		pos += n
	}
	return logits, common, nil
}

// forward runs ids after the cached tokens and returns the last token's logits.
func (e *Engine) forward(ids []int32) (model.Tensor, error) {
	e.dropAhead() // a step submitted ahead is superseded
	var logits model.Tensor
	var err error
	if e.spec != nil {
		// The draft block reads the final hidden rows (speculative.go).
		logits, e.spec.last, err = e.Model.ForwardHidden(e.cache, ids, len(e.cached), false)
	} else {
		logits, err = e.Model.Forward(e.cache, ids, len(e.cached), false)
	}
	if err != nil {
		return nil, err
	}
	e.cached = append(e.cached, ids...)
	return logits, nil
}

// sample picks the next token, reading back only what the sampler needs:
// the argmax id when plain greedy, the top-k candidates when they suffice,
// else the full row. A NaN or +Inf logit seen on the short paths (a
// negative argmax, a non-finite candidate) sends it to the full row too,
// so every path reports it as the sampler does (a *sampler.LogitError
// naming the token). hostMask, when set, is a grammar mask the backend
// could not apply: the full row is read and masked here.
//
// ahead allows the plain greedy path to submit the next step before the
// wait (pipeline.go): set it when another token is wanted unless this one
// stops the request.
func (e *Engine) sample(s *sampler.Sampler, logits model.Tensor, hostMask []uint32, ahead bool) (sampler.Result, error) {
	if hostMask != nil {
		e.dropAhead()
		return e.sampleRow(s, logits, hostMask)
	}
	b := e.Model.Backend()
	p := s.Params()
	k := s.CandidateCount()
	if p.Greedy() && p.Logprobs == nil && k == 1 {
		// No processor can move the maximum: the argmax is the answer.
		id, async, err := e.greedyAhead(logits, ahead)
		if err != nil {
			return sampler.Result{}, err
		}
		if !async {
			b.Argmax(e.argmax, logits)
			var v [1]int32
			if err := b.ReadI32(e.argmax, v[:]); err != nil {
				return sampler.Result{}, err
			}
			id = v[0]
		}
		e.Stats.ReadbackBytes += 4
		if id >= 0 {
			return sampler.Result{ID: id}, s.Accept(id)
		}
		// A NaN row: the step submitted ahead may have reused logits'
		// memory, so the step runs again for its row.
		if e.next != nil {
			e.dropAhead()
			if logits, err = e.rerunLast(); err != nil {
				return sampler.Result{}, err
			}
		}
		return e.sampleRow(s, logits, nil)
	}
	e.dropAhead()
	if k > 0 {
		if k != e.topK {
			if e.topIDs != nil {
				b.Free(e.topIDs)
				b.Free(e.topVals)
			}
			e.topIDs, e.topVals, e.topK = b.NewI32(1, k), b.NewF32(1, k), k
			e.cands, e.candVals = make([]int32, k), make([]float32, k)
		}
		b.TopK(e.topIDs, e.topVals, logits, k)
		if err := model.ReadPair(b, e.topIDs, e.cands, e.topVals, e.candVals); err != nil {
			return sampler.Result{}, err
		}
		e.Stats.ReadbackBytes += int64(8 * k)
		r, err := s.SampleCandidates(e.cands, e.candVals)
		var le *sampler.LogitError
		if !errors.Is(err, sampler.ErrNeedsFullRow) && !errors.As(err, &le) {
			return r, err
		}
	}
	return e.sampleRow(s, logits, nil)
}

// sampleRow samples from the full row, masked by mask when set.
func (e *Engine) sampleRow(s *sampler.Sampler, logits model.Tensor, mask []uint32) (sampler.Result, error) {
	if err := e.Model.Backend().ReadF32(logits, e.row); err != nil {
		return sampler.Result{}, err
	}
	if mask != nil {
		ninf := float32(math.Inf(-1))
		for i := range e.row {
			if mask[i>>5]>>(i&31)&1 == 0 {
				e.row[i] = ninf
			}
		}
	}
	e.Stats.ReadbackBytes += int64(4 * len(e.row))
	e.Stats.FullRows++
	return s.Sample(e.row)
}

// rerunLast runs the last cached token again for its logits. A recurrent
// state already holds it and cannot go back one token, so on such a model
// the cached tokens run again from a zeroed state (a NaN row's rare
// path, in prefill chunks).
func (e *Engine) rerunLast() (model.Tensor, error) {
	ids := slices.Clone(e.cached)
	if !e.Model.Recurrent() {
		e.cached = e.cached[:len(ids)-1]
		return e.forward(ids[len(ids)-1:])
	}
	e.Model.ResetState(e.cache)
	e.cached = e.cached[:0]
	var logits model.Tensor
	for pos := 0; pos < len(ids); {
		n := min(e.opts.PrefillChunk, len(ids)-pos)
		var err error
		if logits, err = e.forward(ids[pos : pos+n]); err != nil {
			return nil, err
		}
		pos += n
	}
	return logits, nil
}
