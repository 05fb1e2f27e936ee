package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"wasmllm/internal/testkit"
)

const testdata = "../testdata"

var (
	tokMu    sync.Mutex
	tokCache = map[string]*Tokenizer{}
)

// hfTok loads (once per test binary) the tokenizer folder under
// testdata/tokenizer or testdata/hf.
func hfTok(t testing.TB, dir string) *Tokenizer {
	t.Helper()
	tokMu.Lock()
	defer tokMu.Unlock()
	if tk, ok := tokCache[dir]; ok {
		return tk
	}
	p := filepath.Join(testdata, dir)
	_, err := os.Stat(filepath.Join(p, "tokenizer.json"))
	testkit.Need(t, err == nil, "%s/tokenizer.json missing (run make testdata): %v", p, err)
	tk, err := FromHFDir(p)
	if err != nil {
		t.Fatalf("FromHFDir(%s): %v", p, err)
	}
	tokCache[dir] = tk
	return tk
}

// readJSONL decodes every line of a golden file (gzipped when its name ends
// in .gz) into a fresh T.
func readJSONL[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r = zr
	}
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for n := 1; sc.Scan(); n++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no lines", path)
	}
	return out
}

// diffIDs describes the first difference between two id lists, or "".
func diffIDs(got, want []int32) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		if i >= len(got) || i >= len(want) || got[i] != want[i] {
			return fmt.Sprintf("first difference at position %d\n  got  (%d) %v\n  want (%d) %v", i, len(got), got, len(want), want)
		}
	}
	return ""
}

// mustEncode is Encode for tests of tokenizers whose patterns cannot fail.
func (t *Tokenizer) mustEncode(text string, addSpecial bool) []int32 {
	return t.mustEncodeOpts(text, EncodeOptions{AddSpecial: addSpecial})
}

func (t *Tokenizer) mustEncodeOpts(text string, o EncodeOptions) []int32 {
	ids, err := t.EncodeOpts(text, o)
	if err != nil {
		panic(err)
	}
	return ids
}
