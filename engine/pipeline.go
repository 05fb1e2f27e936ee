package engine

import "wasmllm/model"

// Pipelined decode. On a backend that reads back asynchronously (the GPU,
// model.AsyncReader), a plain greedy step does not wait for its token
// before the next step is on its way: the next step reads the argmax where
// the GPU wrote it (Model.ForwardFrom) and is submitted first, then the
// token is read. A stop found in that token (EOS, a stop string) discards
// the step submitted ahead: its keys and values sit past the cached tokens,
// which the next prefill overwrites. On a model with recurrent state (a
// *model.HybridCache) the step ahead has also moved the state one token
// on, which nothing overwrites: before submitting it the engine copies the
// states aside (Model.SaveState into Engine.behind, recorded in the same
// submit), and a step ahead that is discarded (dropAhead: a stop, a
// cancel, an error, a step that needs the full row) brings them back, so
// the state holds exactly the cached tokens again. The copy costs a read
// and a write of the states per decode step (Qwen3.5-2B: 19 MiB of f32
// states beside about 1 GiB of q4 weights read). Steps that need more than the argmax
// on the host (sampling, logprobs, penalties, grammars) stay synchronous;
// Stats.StepsAhead over Stats.DecodeSteps says how many went ahead.

// ahead is the decode step submitted before its input token was read.
type ahead struct {
	logits model.Tensor     // its logits, on the backend
	read   model.PendingI32 // its own argmax, being read
	input  int32            // -1 until its input token is known
	// saved: the recurrent states before it are in Engine.behind.
	saved bool
}

// greedyAhead returns the argmax of logits, reading it asynchronously and,
// when more is set (another token will be needed unless this one stops),
// submitting the step that consumes it before the wait. ok is false when the
// backend cannot read asynchronously.
func (e *Engine) greedyAhead(logits model.Tensor, more bool) (id int32, ok bool, err error) {
	b := e.Model.Backend()
	ar, isAsync := b.(model.AsyncReader)
	if !isAsync || e.Model.HostIDs() { // a model that reads its ids on the host waits for each
		return 0, false, nil
	}
	var read model.PendingI32
	if e.next != nil && e.next.logits == logits {
		read = e.next.read // this step went ahead: its argmax is on its way
		e.next = nil       // adopted (forwardAhead): its state is the state
	} else {
		e.dropAhead()
		b.Argmax(e.argmax, logits)
		if read, err = ar.StartReadI32(e.argmax); err != nil {
			return 0, true, err
		}
	}
	if more && len(e.cached)+1 <= e.cache.Capacity() {
		h, recurrent := e.cache.(*model.HybridCache)
		if recurrent {
			if e.behind == nil {
				e.behind = e.Model.NewCheckpoint()
			}
			e.Model.SaveState(e.behind, h)
		}
		next, err := e.Model.ForwardFrom(e.cache, e.argmax, len(e.cached))
		if err != nil {
			if recurrent {
				e.Model.RestoreState(h, e.behind)
			}
			return 0, true, err
		}
		b.Argmax(e.argmax, next)
		e.next = &ahead{logits: next, input: -1, saved: recurrent}
		if e.next.read, err = ar.StartReadI32(e.argmax); err != nil {
			e.dropAhead()
			return 0, true, err
		}
		e.Stats.StepsAhead++
	}
	var v [1]int32
	if err := read.Wait(v[:]); err != nil {
		e.dropAhead()
		return 0, true, err
	}
	if e.next != nil {
		e.next.input = v[0]
	}
	return v[0], true, nil
}

// forwardAhead is forward of one token that a step submitted ahead already
// ran: it adopts that step. ok is false when none did.
func (e *Engine) forwardAhead(id int32) (model.Tensor, bool) {
	if e.next == nil || e.next.input != id || id < 0 {
		e.dropAhead()
		return nil, false
	}
	e.cached = append(e.cached, id)
	return e.next.logits, true
}

// dropAhead discards the step submitted ahead, if any: its keys and values
// are past the cached tokens (overwritten later), and a recurrent state it
// moved on is brought back to the cached tokens.
func (e *Engine) dropAhead() {
	if e.next != nil && e.next.saved {
		e.Model.RestoreState(e.cache.(*model.HybridCache), e.behind)
	}
	e.next = nil
}
