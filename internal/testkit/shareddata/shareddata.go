// Package shareddata finds the company's shared test data: the folder
// shared/ beside the repository (or $WASMLLM_SHARED). It holds the full
// golden sets the repository vendors a subset of. The tests that read it
// run in `make test-extended` (WASMLLM_EXTENDED=1) and skip otherwise, so
// `make test` never needs it.
package shareddata

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the shared folder's subfolder sub (e.g. "testdata-k"), or
// skips t outside an extended run or when it is not there.
func Dir(t testing.TB, sub string) string {
	t.Helper()
	if os.Getenv("WASMLLM_EXTENDED") == "" {
		t.Skip("extended test: run with WASMLLM_EXTENDED=1 (make test-extended)")
	}
	root := os.Getenv("WASMLLM_SHARED")
	if root == "" {
		_, file, _, _ := runtime.Caller(0) // <repo>/internal/testkit/shareddata/shareddata.go
		root = filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared")
	}
	dir := filepath.Join(root, sub)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Skipf("no shared test data at %s (set WASMLLM_SHARED; make test-extended)", dir)
	}
	return dir
}
