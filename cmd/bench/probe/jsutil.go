//go:build js

package main

import (
	"context"
	"fmt"
	"syscall/js"
	"wasmllm/internal/jsutil"
)

// fetchBytes GETs url from the page's server.
func fetchBytes(ctx context.Context, url string) ([]byte, error) {
	resp, err := jsutil.Await(ctx, js.Global().Call("fetch", url))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}
	if !resp.Get("ok").Bool() {
		return nil, fmt.Errorf("fetching %s: HTTP %d", url, resp.Get("status").Int())
	}
	ab, err := jsutil.Await(ctx, resp.Call("arrayBuffer"))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	u8 := js.Global().Get("Uint8Array").New(ab)
	b := make([]byte, u8.Length())
	js.CopyBytesToGo(b, u8)
	return b, nil
}
