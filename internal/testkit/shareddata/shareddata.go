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

	"wasmllm/internal/testkit"
)

// Dir returns the shared folder's subfolder sub (e.g. "testdata-k"). It
// skips t outside an extended run; in one, the folder is a testkit.Need
// (under CI=true its absence fails the test).
func Dir(t testing.TB, sub string) string {
	t.Helper()
	if !testkit.Extended() {
		t.Skip("extended test: run with WASMLLM_EXTENDED=1 (make test-extended)")
	}
	root := os.Getenv("WASMLLM_SHARED")
	if root == "" {
		_, file, _, _ := runtime.Caller(0) // <repo>/internal/testkit/shareddata/shareddata.go
		root = filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared")
	}
	dir := filepath.Join(root, sub)
	st, err := os.Stat(dir)
	testkit.Need(t, err == nil && st.IsDir(), "no shared test data at %s (set WASMLLM_SHARED)", dir)
	return dir
}
