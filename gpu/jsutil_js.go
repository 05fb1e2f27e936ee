//go:build js

package gpu

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"
)

// await blocks until the promise p settles. It must not be called from a
// js.Func callback: the promise can only settle once control is back in the
// browser's event loop.
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
		ch <- result{err: errors.New(jsErrorText(arg(a, 0)))}
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

// jsErrorText returns an Error's message, or the value as a string.
func jsErrorText(v js.Value) string {
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

// try runs f and turns a JavaScript exception (a js.Error panic) into an error.
func try(op string, f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			jerr, ok := r.(js.Error)
			if !ok {
				panic(r)
			}
			err = &GPUError{Kind: "exception", Label: op, Message: jsErrorText(jerr.Value)}
		}
	}()
	f()
	return nil
}

// jsNum reads a numeric property, 0 when absent.
func jsNum(v js.Value, name string) float64 {
	if x := v.Get(name); x.Type() == js.TypeNumber {
		return x.Float()
	}
	return 0
}

func jsStr(v js.Value, name string) string {
	if x := v.Get(name); x.Type() == js.TypeString {
		return x.String()
	}
	return ""
}

func jsSetHas(set js.Value, name string) bool {
	return set.Truthy() && set.Call("has", name).Bool()
}

func errorf(op, label, format string, args ...any) error {
	return &UsageError{Op: op, Label: label, Msg: fmt.Sprintf(format, args...)}
}
