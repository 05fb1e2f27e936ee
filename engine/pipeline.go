package engine

import "wasmllm/model"

// Pipelined decode. On a backend that reads back asynchronously (the GPU,
// model.AsyncReader), a plain greedy step does not wait for its token
// before the next step is on its way: the next step reads the argmax where
// the GPU wrote it (Model.ForwardFrom) and is submitted first, then the
// token is read. A stop found in that token (EOS, a stop string) discards
// the step submitted ahead: its keys and values sit past the cached tokens,
// which the next prefill overwrites. Steps that need more than the argmax
// on the host (sampling, logprobs, penalties, grammars) stay synchronous;
// Stats.StepsAhead over Stats.DecodeSteps says how many went ahead.

// ahead is the decode step submitted before its input token was read.
type ahead struct {
	logits model.Tensor     // its logits, on the backend
	read   model.PendingI32 // its own argmax, being read
	input  int32            // -1 until its input token is known
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
	} else {
		b.Argmax(e.argmax, logits)
		if read, err = ar.StartReadI32(e.argmax); err != nil {
			return 0, true, err
		}
	}
	e.next = nil
	if more && len(e.cached)+1 <= e.cache.Capacity() {
		next, err := e.Model.ForwardFrom(e.cache, e.argmax, len(e.cached))
		if err != nil {
			return 0, true, err
		}
		b.Argmax(e.argmax, next)
		nr, err := ar.StartReadI32(e.argmax)
		if err != nil {
			return 0, true, err
		}
		e.next = &ahead{logits: next, read: nr, input: -1}
		e.Stats.StepsAhead++
	}
	var v [1]int32
	if err := read.Wait(v[:]); err != nil {
		e.next = nil
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
		e.next = nil
		return nil, false
	}
	e.cached = append(e.cached, id)
	return e.next.logits, true
}
