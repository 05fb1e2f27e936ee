package manifest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse: Parse never panics, and whatever it accepts survives Encode and
// Parse unchanged. Seeds are in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"format_version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		enc, err := m.Encode()
		if err != nil {
			t.Fatalf("Encode of a valid manifest: %v", err)
		}
		m2, err := Parse(enc)
		if err != nil {
			t.Fatalf("re-parse of Encode output: %v\n%s", err, enc)
		}
		// Encode compacts the tokenizer object; compare it compacted.
		m.Tokenizer, _ = marshal(m.Tokenizer, false)
		m2.Tokenizer, _ = marshal(m2.Tokenizer, false)
		if d := cmp.Diff(m, m2, sameManifest); d != "" {
			t.Fatalf("round trip differs:\n%s", d)
		}
	})
}

// TestFuzzSeeds keeps the committed seeds meaningful: those named valid* must
// parse (so fuzzing reaches the round trip), the others must not.
func TestFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		body, ok := strings.CutPrefix(string(raw), "go test fuzz v1\n[]byte(")
		body, ok2 := strings.CutSuffix(strings.TrimSpace(body), ")")
		data, err := strconv.Unquote(body)
		if !ok || !ok2 || err != nil {
			t.Fatalf("%s: not a fuzz seed file", e.Name())
		}
		_, err = Parse([]byte(data))
		if valid := strings.HasPrefix(e.Name(), "valid"); valid != (err == nil) {
			t.Errorf("seed %s: Parse error %v", e.Name(), err)
		}
	}
}
