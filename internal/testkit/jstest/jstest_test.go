//go:build js

package jstest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
)

func TestReadFileText(t *testing.T) {
	got, err := ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("module wasmllm\n")) {
		t.Fatalf("go.mod starts %q", got[:min(len(got), 40)])
	}
}

// stories260K.gguf's digest is in testdata/README.md.
func TestReadFileBinary(t *testing.T) {
	got, err := ReadFile("testdata/models/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	const want = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"
	if sum := fmt.Sprintf("%x", sha256.Sum256(got)); sum != want {
		t.Fatalf("sha256 %s over %d bytes, want %s", sum, len(got), want)
	}
}

func TestReadFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
	}{
		{"testdata/does-not-exist", 404},
		{"testdata", 404},
		{"../etc/passwd", 0},
		{"/go.mod", 0},
		{"a//b", 0},
		{"", 0},
	} {
		_, err := ReadFile(tc.name)
		var fe *FetchError
		if !errors.As(err, &fe) || fe.Status != tc.status || fe.Path != tc.name {
			t.Errorf("ReadFile(%q) = %v, want FetchError with status %d", tc.name, err, tc.status)
		}
	}
}
