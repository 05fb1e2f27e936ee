//go:build js

package main

import (
	"context"
	"encoding/json"
	"syscall/js"
	"wasmllm/internal/jsutil"

	"wasmllm/api"
)

// await blocks the calling goroutine until the promise p settles. It must
// not be called from inside a js.Func callback. A rejection with a
// LoaderError (web/loader.js) keeps its code and details.
func await(p js.Value) (js.Value, error) {
	return jsutil.AwaitWith(context.Background(), p, jsError)
}

// yieldEventLoop lets pending browser events (such as an abort message)
// run before it returns.
func yieldEventLoop() {
	await(js.Global().Call("__wasmllmYield"))
}

func arg(a []js.Value, i int) js.Value {
	if i < len(a) {
		return a[i]
	}
	return js.Undefined()
}

// jsError converts a JavaScript rejection value into an error: an *api.Error
// when it carries a code, else an internal error with its message.
func jsError(v js.Value) error {
	msg := "(no message)"
	code := api.CodeInternal
	var details map[string]any
	if v.Type() == js.TypeObject {
		if m := v.Get("message"); m.Type() == js.TypeString {
			msg = m.String()
		}
		if c := v.Get("code"); c.Type() == js.TypeString && c.String() != "" {
			code = c.String()
		} else if n := v.Get("name"); n.Type() == js.TypeString && n.String() == "AbortError" {
			code = api.CodeAborted
		}
		if d := v.Get("details"); d.Type() == js.TypeObject {
			s := js.Global().Get("JSON").Call("stringify", d).String()
			json.Unmarshal([]byte(s), &details)
		}
	} else if v.Type() == js.TypeString {
		msg = v.String()
	}
	return &api.Error{Code: code, Message: msg, Details: details}
}

// jsValueOf converts v to a JavaScript value through JSON.
func jsValueOf(v any) js.Value {
	b, err := json.Marshal(v)
	if err != nil {
		return js.Null()
	}
	return js.Global().Get("JSON").Call("parse", string(b))
}
