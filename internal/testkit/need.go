// Package testkit holds what the tests of every package share; the test
// tooling itself (browsers, goldens, fixtures, servers) is in its
// subpackages.
package testkit

import (
	"os"
	"testing"
)

// CI reports whether the tests run in CI (the environment variable CI is
// "true", as .ci/run has it).
func CI() bool { return os.Getenv("CI") == "true" }

// Need is the check before a test that needs something outside the
// repository's Go code: a tool (node, npm, brotli), a browser, or the test
// data that make testdata sets up. When ok is false the test is skipped
// with the message, or fails with it under CI, where everything the tests
// need is installed and a skip would hide that the test never ran.
func Need(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if ok {
		return
	}
	if CI() {
		t.Fatalf("CI=true, and a test cannot run: "+format, args...)
	}
	t.Skipf(format, args...)
}

// Extended reports whether this is an extended run (WASMLLM_EXTENDED set,
// as make test-extended has it): the full golden sets in ../shared, and
// the full sampling of the property tests that make test runs a part of.
func Extended() bool { return os.Getenv("WASMLLM_EXTENDED") != "" }
