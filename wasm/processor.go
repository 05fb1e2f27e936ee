//go:build js

package main

import (
	"context"
	"fmt"
	"math"
	"syscall/js"
	"unsafe"

	"wasmllm/api"
	"wasmllm/internal/jsutil"
	"wasmllm/sampler"
)

// pageProcessors runs a request's logits_processors, JavaScript functions
// that stay in the page (functions cannot cross to the worker), as one
// sampler.LogitsProcessor. Per token it copies the full row into a buffer
// of worker.js, which transfers it to the page and back (no structured
// clone), and waits for the answer while the worker's event loop runs, so
// that an abort ends the wait at once.
type pageProcessors struct {
	ctx context.Context // the job's, cancelled by abort
	id  int             // the request's message id
}

// Process implements sampler.LogitsProcessor.
func (p *pageProcessors) Process(row []float32, out []int32) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	// A NaN or +Inf the model produced must not be blamed on the page.
	for i, v := range row {
		if v != v || v > math.MaxFloat32 {
			return &sampler.LogitError{Index: i, Value: v, Stage: "model"}
		}
	}
	g := js.Global()
	rowBytes := f32Bytes(row)
	js.CopyBytesToJS(g.Call("__wasmllmProcessBuffer", p.id, len(rowBytes)), rowBytes)
	ids := g.Get("Uint8Array").New(4 * len(out))
	if len(out) > 0 {
		js.CopyBytesToJS(ids, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), 4*len(out)))
	}
	v, err := jsutil.AwaitWith(p.ctx, g.Call("__wasmllmProcess", p.id, ids), jsError)
	if err != nil {
		if p.ctx.Err() != nil {
			// The page's answer may still come: drop the wait now, before
			// the event loop runs again, so it settles nothing.
			g.Call("__wasmllmProcessDrop", p.id)
		}
		return err
	}
	if bad := v.Get("invalid"); bad.Type() == js.TypeObject {
		return invalidLogit(bad)
	}
	got := v.Get("logits")
	if got.Type() != js.TypeObject || got.Get("byteLength").Int() != len(rowBytes) {
		return api.Errorf(api.CodeInternal, "logits_processors: the page sent back a row of %v bytes, want %d", got.Get("byteLength"), len(rowBytes))
	}
	js.CopyBytesToGo(rowBytes, got)
	return nil
}

// invalidLogit is the error for a NaN or +Inf written by processor
// bad.index at bad.token: the sampler's *LogitError, as a bad request.
func invalidLogit(bad js.Value) error {
	i, tok := bad.Get("index").Int(), bad.Get("token").Int()
	val := float32(math.NaN())
	if bad.Get("value").String() == "Infinity" {
		val = float32(math.Inf(1))
	}
	le := &sampler.LogitError{Index: tok, Value: val, Stage: fmt.Sprintf("written by logits_processors[%d]", i)}
	return &api.Error{Code: api.CodeBadRequest, Message: le.Error(), Err: le,
		Details: map[string]any{"param": "logits_processors", "index": i, "token": tok, "reason": "invalid_logit"}}
}

// f32Bytes views v's memory as bytes (wasm and JavaScript typed arrays are
// both little-endian), so the row is copied once each way.
func f32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

// processorCount reads the message's processors field: how many
// logits_processors the page holds for the request.
func processorCount(msg js.Value) (int, *api.Error) {
	v := msg.Get("processors")
	switch {
	case v.IsUndefined() || v.IsNull():
		return 0, nil
	case v.Type() != js.TypeNumber || v.Float() != math.Trunc(v.Float()) || v.Float() < 0 || v.Float() > 1<<20:
		return 0, &api.Error{Code: api.CodeBadRequest, Message: "request: processors must be a count of logits_processors",
			Details: map[string]any{"param": "logits_processors"}}
	}
	return v.Int(), nil
}
