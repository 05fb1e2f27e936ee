//go:build js

package main

import (
	"context"
	"fmt"
	"syscall/js"
	"wasmllm/internal/jsutil"
)

func await(ctx context.Context, p js.Value) (js.Value, error) { return jsutil.Await(ctx, p) }

func arg(a []js.Value, i int) js.Value { return jsutil.Arg(a, i) }

func errorText(v js.Value) string { return jsutil.ErrorText(v) }

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
