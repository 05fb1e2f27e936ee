package browsertest

import (
	"testing"

	"wasmllm/internal/testkit/testserver"
)

// FaultServer is the test file server (internal/testkit/testserver) laid out like
// the real server: web at /, the wasm at /wasmllm.wasm, model folders under
// /models/, with its faults (cuts, offline, a slow rate) on /models/.
type FaultServer = testserver.Server

// Request is one line of a FaultServer's access log.
type Request = testserver.Request

// NewFaultServer serves web, wasm and models on addr ("" for a free port
// on 127.0.0.1) until the test ends.
func NewFaultServer(t testing.TB, web, wasm, models, addr string) *FaultServer {
	t.Helper()
	s, err := testserver.Start(testserver.Options{Addr: addr, Mounts: []testserver.Mount{
		{Prefix: "/", Path: web}, {Prefix: "/wasmllm.wasm", Path: wasm}, {Prefix: "/models/", Path: models}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
