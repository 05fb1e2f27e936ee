package shaders

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// Every storage binding carries a shape comment; a uniform is described by
// the comments on its struct's fields.
func TestBindingsHaveShapeComments(t *testing.T) {
	binding := regexp.MustCompile(`@binding\(\d+\)\s+var<storage`)
	names, err := fs.Glob(FS, "*.wgsl")
	if err != nil || len(names) == 0 {
		t.Fatalf("no shaders: %v", err)
	}
	for _, name := range names {
		src, err := Source(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(src, "\n") {
			if binding.MatchString(line) && !strings.Contains(line, "//") {
				t.Errorf("%s:%d: binding without a shape comment: %s", Path(name), i+1, line)
			}
		}
	}
}

func TestSourceMissing(t *testing.T) {
	if _, err := Source("nope.wgsl"); err == nil {
		t.Fatal("no error for a missing shader")
	}
}
