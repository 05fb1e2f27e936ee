//go:build js

// Package jstest helps GOOS=js tests that run under cmd/wasmexec, which serves
// the repository root read-only under /fs/.
package jstest

import (
	"context"
	"fmt"
	"path"
	"syscall/js"
	"wasmllm/internal/jsutil"
)

// FetchError reports a file that the runner did not serve.
type FetchError struct {
	Path   string // as given to ReadFile
	Status int    // HTTP status; 0 when the request itself failed
	Msg    string // the browser's message when Status is 0
}

func (e *FetchError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("jstest: fetching %s: %s (is the program running under cmd/wasmexec?)", e.Path, e.Msg)
	}
	return fmt.Sprintf("jstest: fetching %s: HTTP %d", e.Path, e.Status)
}

// ReadFile returns the contents of the file at name, a slash-separated path
// relative to the repository root, e.g. "testdata/models/x.gguf".
//
// It blocks the calling goroutine on the browser's fetch, so it must not be
// called from inside a js.Func callback.
func ReadFile(name string) ([]byte, error) {
	clean := path.Clean("/" + name)[1:]
	if clean == "" || clean != name {
		return nil, &FetchError{Path: name, Msg: "not a clean relative path"}
	}
	res, err := await(js.Global().Call("fetch", "/fs/"+clean))
	if err != nil {
		return nil, &FetchError{Path: name, Msg: err.Error()}
	}
	if !res.Get("ok").Bool() {
		return nil, &FetchError{Path: name, Status: res.Get("status").Int()}
	}
	buf, err := await(res.Call("arrayBuffer"))
	if err != nil {
		return nil, &FetchError{Path: name, Msg: err.Error()}
	}
	u8 := js.Global().Get("Uint8Array").New(buf)
	b := make([]byte, u8.Get("byteLength").Int())
	js.CopyBytesToGo(b, u8)
	return b, nil
}

// await blocks until p settles.
func await(p js.Value) (js.Value, error) { return jsutil.Await(context.Background(), p) }
