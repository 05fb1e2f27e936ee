package toolcall

import (
	"encoding/json"
	"strings"
	"testing"
)

// scanObject runs the scanner over s and reports whether s is one JSON
// object (with whitespace around it), and the length of its longest
// prefix the scanner accepted.
func scanObject(s string) (ok bool, accepted int) {
	body := strings.TrimRight(s, " \t\r\n")
	sc := newObjectScan()
	for i := 0; i < len(body); i++ {
		if !sc.step(body[i]) {
			return false, i
		}
	}
	return sc.done(), len(body)
}

var jsonSamples = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a": [1, 2, {"b": null}], "c": "x\"y\\z\u00e9\/"}`,
	`{"n": -0.5e+10, "m": 0, "k": 1E3, "t": true, "f": false}`, `{"a": []}`, `{"a": [[]]}`,
	`{"s": "tab\there"}`, `{"a": 01}`, `{"a": 1.}`, `{"a": .5}`, `{"a": -}`, `{"a": 1e}`,
	`{"a": tru}`, `{"a": nulll}`, `{"a" 1}`, `{"a": 1,}`, `{,}`, `{"a": [1,]}`, `{"a": [,1]}`,
	`{"a": "\x"}`, `{"a": "\u12G4"}`, `{"a": "` + "\x01" + `"}`, `{1: 2}`, `{"a": 1}}`, `{"a": 1} {}`,
	`[1]`, `"s"`, `1`, ``, `{`, `{"a": [1, 2}`, `{"a": {"b": 1]}`, `{"a": "\ud800"}`, `{"a":1e5,"b":-12.25E-3}`,
}

// TestJSONScan compares the scanner with encoding/json on objects, and
// checks that it accepts every prefix of a valid one.
func TestJSONScan(t *testing.T) {
	for _, s := range jsonSamples {
		want := json.Valid([]byte(s)) && strings.HasPrefix(strings.TrimSpace(s), "{")
		ok, n := scanObject(s)
		if ok != want {
			t.Errorf("%q: scanner says %v (accepted %d bytes), encoding/json %v", s, ok, n, want)
		}
		if want && n != len(strings.TrimRight(s, " \t\r\n")) {
			t.Errorf("%q: accepted only %d bytes", s, n)
		}
	}
}

func FuzzJSONScan(f *testing.F) {
	for _, s := range jsonSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := json.Valid([]byte(s)) && strings.HasPrefix(strings.TrimSpace(s), "{")
		if ok, n := scanObject(s); ok != want {
			t.Errorf("%q: scanner says %v (accepted %d bytes), encoding/json %v", s, ok, n, want)
		}
	})
}

// FuzzStream checks on arbitrary text that streaming in two pieces never
// panics, gives well-shaped deltas, and agrees with Parse whenever Parse
// finds no call or the stream found the same calls.
func FuzzStream(f *testing.F) {
	for _, c := range replyCases {
		f.Add(int(c.f), c.text, uint(len(c.text)/2))
	}
	f.Fuzz(func(t *testing.T, fi int, text string, at uint) {
		fm := Format(uint(fi) % 4)
		i := int(at % uint(len(text)+1))
		content, calls, _ := Parse(fm, text)
		if len(calls) == 0 && content != text {
			t.Fatalf("no calls, but content %q differs from the text", content)
		}
		p := NewStreamParser(fm)
		ds := append(p.Add(text[:i]), p.Add(text[i:])...)
		ds = append(ds, p.Finish()...)
		checkDeltaShape(t, "fuzz", ds)
	})
}
