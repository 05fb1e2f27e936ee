package search

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/loader"
)

func TestSplitMarkdown(t *testing.T) {
	src := "Intro text.\n\n# Getting *started*\n\nRun `make`, then [open](http://x) the page.\n\n```\ncode is skipped\n```\n- a list item\n\n## Two words\n" +
		strings.Repeat("word ", 130) + "\n"
	ps := SplitMarkdown("docs/a.md", src)
	want := []Passage{
		{Page: "docs/a.md", Text: "Intro text."},
		{Page: "docs/a.md", Heading: "Getting *started*", Anchor: "getting-started", Text: "Run make, then open the page. a list item"},
		{Page: "docs/a.md", Heading: "Two words", Anchor: "two-words", Text: strings.TrimSpace(strings.Repeat("word ", MaxWords))},
		{Page: "docs/a.md", Heading: "Two words", Anchor: "two-words", Text: strings.TrimSpace(strings.Repeat("word ", 10))},
	}
	if len(ps) != len(want) {
		t.Fatalf("%d passages: %+v", len(ps), ps)
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Errorf("passage %d: %+v\nwant %+v", i, ps[i], want[i])
		}
	}
}

func TestSplitHTML(t *testing.T) {
	src := `<html><head><style>p{}</style><script>var x = "<p>no</p>";</script></head><body><nav><p>menu</p></nav>
<h1 id="top">The <em>title</em></h1><p>First &amp; second.</p><ul><li>item</li></ul><h2>Next</h2><p>More</p></body></html>`
	ps := SplitHTML("a.html", src)
	if len(ps) != 2 || ps[0].Heading != "The title" || ps[0].Anchor != "top" || ps[0].Text != "First & second. item" ||
		ps[1].Heading != "Next" || ps[1].Anchor != "" || ps[1].Text != "More" {
		t.Fatalf("%+v", ps)
	}
}

// TestIndexRoundTrip: Write then Read gives the entries and the f16 vectors;
// Rank orders by score with ties to the lower index; a changed file fails
// its sha256.
func TestIndexRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ps := []Passage{{Page: "a.md", Text: "alpha"}, {Page: "b.md", Heading: "B", Anchor: "b", Text: strings.Repeat("x", 300)}, {Page: "c.md", Text: "c"}}
	vecs := [][]float32{{1, 0}, {0.6, 0.8}, {1, 0}}
	m, err := Write(dir, "tiny", "query: ", ps, vecs)
	if err != nil {
		t.Fatal(err)
	}
	x, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if x.Manifest.Count != 3 || x.Manifest.Dimensions != 2 || x.Manifest.QueryPrefix != "query: " || x.Entries[1].Anchor != "b" ||
		len(x.Entries[1].Snippet) > SnippetChars+3 || x.Vectors[2] != loader.F16ToF32(loader.F32ToF16(0.6)) {
		t.Fatalf("%+v %+v %v", x.Manifest, x.Entries, x.Vectors)
	}
	hits := x.Rank([]float32{1, 0}, 3)
	if hits[0].Index != 0 || hits[1].Index != 2 || hits[2].Index != 1 {
		t.Errorf("rank %+v", hits)
	}
	if err := os.WriteFile(filepath.Join(dir, VectorsFile), make([]byte, m.Files[VectorsFile].Bytes), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, ErrIntegrity) {
		t.Errorf("changed vectors: %v", err)
	}
}
