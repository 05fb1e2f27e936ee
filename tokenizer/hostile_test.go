package tokenizer

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit"
)

func splitPre(pattern string) string {
	return fmt.Sprintf(`{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":%q},"behavior":"Isolated"},{"type":"ByteLevel","use_regex":false}]}`, pattern)
}

// TestSplitPatternExponential: a Split pattern whose backtracking grows
// exponentially, (a+)+$, took 0.18 s on 20 a's and over 30 s on 30. It is
// refused at load, naming the file and field.
func TestSplitPatternExponential(t *testing.T) {
	for _, pat := range []string{`(a+)+$`, `(?:a*b?)*c`, `((a+)?)+x`, `(\s*\w+){2,}$`, `([ab]+){1,40}$`} {
		_, err := FromHFJSON(hfJSON(`"a b"`, splitPre(pat)), nil)
		wantFormatError(t, pat, err, "pre_tokenizer.pretokenizers[0]", ErrRegexBudget)
	}
}

// TestSplitPatternBudget: a pattern that passes the load-time check but
// still backtracks exponentially, (a|aa)*$, stops at its time budget with
// a typed error instead of running for minutes.
func TestSplitPatternBudget(t *testing.T) {
	tk, err := FromHFJSON(hfJSON(`"a b"`, splitPre(`(a|aa)*$`)), nil)
	if err != nil {
		t.Fatal(err)
	}
	work := testkit.StartWork()
	_, err = tk.Encode(strings.Repeat("a", 60)+"!", false)
	took := work()
	wantFormatError(t, "(a|aa)*$", err, "pre_tokenizer.pretokenizers[0].pattern", ErrRegexBudget)
	if took > 10*time.Second {
		t.Errorf("took %v, want the %v budget to stop it", took, regexSplitBudget)
	}
	// The same tokenizer still encodes text the pattern handles quickly.
	if ids, err := tk.Encode("ab ab", false); err != nil || len(ids) == 0 {
		t.Errorf("ordinary text: %v %v", ids, err)
	}
}

func TestNestedQuantifier(t *testing.T) {
	safe := []string{
		patternLlama3, patternQwen2, patternGPT2,
		// DeepSeek-V3's and similar real pre-tokenizer patterns
		`\p{N}{1,3}`, `[一-龥぀-ゟ゠-ヿ]+`,
		`[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_` + "`" + `{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		`(?:a+)?b`, `(ab)+`, `(a|b)*`, `(?>a+)+`, `[(+]+`, `\(a+\)+`, `a{2}`, `(a+){1}`, `x{`, `(a+b)?c`,
	}
	for _, p := range safe {
		if at, bad := nestedQuantifier(p); bad {
			t.Errorf("%q flagged at %d", p, at)
		}
	}
	bad := []string{`(a+)+`, `(a*)*`, `(?:x*y)*`, `((a)+b)+`, `(a+){2,5}`, `(a{1,}){3,}`, `((a+)?)+`, `(?i:(a+))+`, `((?<n>a+))*`}
	for _, p := range bad {
		if _, bad := nestedQuantifier(p); !bad {
			t.Errorf("%q not flagged", p)
		}
	}
}

// TestMergesHostile: a duplicate merge is refused, and 10^7 duplicate
// merges (a 67 MB tokenizer.json took 923 MB) are refused at the first
// duplicate with little memory.
func TestMergesHostile(t *testing.T) {
	_, err := FromHFJSON(hfJSON(`"a b", "a b"`, `{"type":"ByteLevel"}`), nil)
	wantFormatError(t, "duplicate", err, "model.merges[1]", nil)

	merges := strings.Repeat(`"a b",`, 10_000_000) + `"a b"`
	data := hfJSON(merges, `{"type":"ByteLevel"}`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = FromHFJSON(data, nil)
	runtime.ReadMemStats(&after)
	wantFormatError(t, "10^7 duplicates", err, "model.merges[1]", nil)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*uint64(len(data)) {
		t.Errorf("allocated %d MB for a %d MB file", alloc>>20, len(data)>>20)
	}
}

func TestTokenizerJSONTooLarge(t *testing.T) {
	_, err := FromHFJSON(make([]byte, maxTokenizerJSON+1), nil)
	var fe *formatError
	if !errors.As(err, &fe) || fe.File != "tokenizer.json" {
		t.Errorf("got %v, want a FormatError naming tokenizer.json", err)
	}
}
