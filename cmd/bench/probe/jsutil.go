//go:build js

package main

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"
)

// await blocks until the promise p settles; never call it from a js.Func.
func await(ctx context.Context, p js.Value) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	onOK := js.FuncOf(func(_ js.Value, a []js.Value) any {
		ch <- result{v: arg(a, 0)}
		return nil
	})
	onErr := js.FuncOf(func(_ js.Value, a []js.Value) any {
		ch <- result{err: errors.New(errorText(arg(a, 0)))}
		return nil
	})
	defer onOK.Release()
	defer onErr.Release()
	p.Call("then", onOK, onErr)
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return js.Undefined(), ctx.Err()
	}
}

func arg(a []js.Value, i int) js.Value {
	if i < len(a) {
		return a[i]
	}
	return js.Undefined()
}

func errorText(v js.Value) string {
	if v.Type() == js.TypeObject {
		if m := v.Get("message"); m.Type() == js.TypeString {
			return m.String()
		}
	}
	if v.IsUndefined() || v.IsNull() {
		return "(no message)"
	}
	return v.Call("toString").String()
}

// fetchBytes GETs url from the page's server.
func fetchBytes(ctx context.Context, url string) ([]byte, error) {
	resp, err := await(ctx, js.Global().Call("fetch", url))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}
	if !resp.Get("ok").Bool() {
		return nil, fmt.Errorf("fetching %s: HTTP %d", url, resp.Get("status").Int())
	}
	ab, err := await(ctx, resp.Call("arrayBuffer"))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	u8 := js.Global().Get("Uint8Array").New(ab)
	b := make([]byte, u8.Length())
	js.CopyBytesToGo(b, u8)
	return b, nil
}
