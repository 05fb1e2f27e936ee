package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestBundledUpToDate converts testdata/models/stories260K.gguf as
// models/stories260K/README.md says and compares every file with the
// committed folder.
func TestBundledUpToDate(t *testing.T) {
	committed := filepath.Join("..", "models", "stories260K")
	dir, _ := convertTo(t, filepath.Join(testdata, "models", "stories260K.gguf"), quantKeep, func(o *Options) {
		o.Name = "stories260K"
		o.Extra = []string{filepath.Join(committed, "LICENSE"), filepath.Join(committed, "README.md")}
	})
	got, want := listDir(t, dir), listDir(t, committed)
	if !slices.Equal(got, want) {
		t.Fatalf("converter writes %v, committed folder has %v", got, want)
	}
	for _, name := range want {
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, _ := os.ReadFile(filepath.Join(committed, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from a fresh conversion; regenerate with the command in its README.md", name)
		}
	}
}
