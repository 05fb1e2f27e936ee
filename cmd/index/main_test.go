package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/search"
)

// TestIndex indexes a small site and reads the index back: every page's
// passages, verified by the manifest's sha256.
func TestIndex(t *testing.T) {
	site := t.TempDir()
	os.WriteFile(filepath.Join(site, "a.md"), []byte("# Cats\n\nThe cat sat on the mat.\n\n# Dogs\n\nThe dog ran.\n"), 0o644)
	os.MkdirAll(filepath.Join(site, "sub"), 0o755)
	os.WriteFile(filepath.Join(site, "sub", "b.html"), []byte(`<h1 id="sun">Sun</h1><p>The sun is hot.</p>`), 0o644)
	os.WriteFile(filepath.Join(site, ".hidden.md"), []byte("secret"), 0o644)
	out := filepath.Join(t.TempDir(), "idx")
	c, err := parseFlags([]string{"-model", filepath.Join("..", "..", "testdata", "embed", "models", "tiny-bert-cls-q4_0.gguf"), "-dir", site, "-out", out, "-batch", "2"})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := run(c, &log); err != nil {
		t.Fatal(err)
	}
	x, err := search.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if x.Manifest.Count != 3 || x.Manifest.Dimensions != 128 || x.Entries[2].Page != "sub/b.html" || x.Entries[2].Anchor != "sun" || x.Entries[0].Anchor != "cats" {
		t.Fatalf("%+v %+v", x.Manifest, x.Entries)
	}
	if !strings.Contains(log.String(), "3 passages of 2 pages") {
		t.Errorf("log %q", log.String())
	}
	if _, err := parseFlags([]string{"-model", "m"}); err == nil {
		t.Error("no -dir: no error")
	}
}
