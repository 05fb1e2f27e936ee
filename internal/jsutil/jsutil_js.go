//go:build js

// Package jsutil holds the few syscall/js helpers every GOOS=js package
// needs: awaiting a promise from Go and reading callback arguments.
package jsutil

import (
	"context"
	"errors"
	"syscall/js"
)

// Await blocks the calling goroutine until the promise p settles, or ctx
// is done. It must not be called from a js.Func callback: the promise can
// only settle once control is back in the browser's event loop. A
// rejection becomes an error with the rejected value's text.
func Await(ctx context.Context, p js.Value) (js.Value, error) {
	return AwaitWith(ctx, p, func(v js.Value) error { return errors.New(ErrorText(v)) })
}

// AwaitWith is Await with the rejection mapped to an error by reject.
func AwaitWith(ctx context.Context, p js.Value, reject func(js.Value) error) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	onOK := js.FuncOf(func(_ js.Value, a []js.Value) any {
		ch <- result{v: Arg(a, 0)}
		return nil
	})
	onErr := js.FuncOf(func(_ js.Value, a []js.Value) any {
		ch <- result{err: reject(Arg(a, 0))}
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

// Arg is a[i], or undefined past the end.
func Arg(a []js.Value, i int) js.Value {
	if i < len(a) {
		return a[i]
	}
	return js.Undefined()
}

// ErrorText returns an Error's message (prefixed by its name unless it is
// a plain Error), or the value as a string.
func ErrorText(v js.Value) string {
	if v.Type() == js.TypeObject {
		if m := v.Get("message"); m.Type() == js.TypeString {
			if n := v.Get("name"); n.Type() == js.TypeString && n.String() != "Error" {
				return n.String() + ": " + m.String()
			}
			return m.String()
		}
	}
	if v.IsUndefined() || v.IsNull() {
		return "(no message)"
	}
	return v.Call("toString").String()
}
