package toolcall

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// streamPieces feeds pieces to a parser seeded like parseSeed and returns
// all deltas, checking the shape of the call deltas on the way.
func streamPieces(t *testing.T, label string, f Format, pieces []string) []Delta {
	t.Helper()
	p := NewStreamParser(f)
	p.Rand = rand.New(rand.NewPCG(7, 7))
	var all []Delta
	for _, s := range pieces {
		all = append(all, p.Add(s)...)
	}
	all = append(all, p.Finish()...)
	if extra := p.Finish(); extra != nil {
		t.Errorf("%s: second Finish returned %v", label, extra)
	}
	checkDeltaShape(t, label, all)
	if p.Calls() != countHeaders(all) {
		t.Errorf("%s: Calls() = %d, %d announced", label, p.Calls(), countHeaders(all))
	}
	return all
}

func countHeaders(ds []Delta) int {
	n := 0
	for _, d := range ds {
		if d.Call != nil && d.Call.ID != "" {
			n++
		}
	}
	return n
}

// checkDeltaShape checks what an OpenAI client relies on: each call starts
// with a delta holding its id and name and no arguments, indices count up
// from 0, fragments belong to the latest call, and no delta is empty.
func checkDeltaShape(t *testing.T, label string, ds []Delta) {
	t.Helper()
	next := 0
	for i, d := range ds {
		c := d.Call
		switch {
		case c == nil:
			if d.Content == "" {
				t.Errorf("%s: delta %d is empty content", label, i)
			}
		case c.ID != "":
			if c.Index != next || c.Name == "" || c.Arguments != "" || !idPattern.MatchString(c.ID) {
				t.Errorf("%s: delta %d: bad call start %+v (next index %d)", label, i, *c, next)
			}
			next++
		default:
			if c.Index != next-1 || c.Name != "" || c.Arguments == "" {
				t.Errorf("%s: delta %d: bad fragment %+v (current call %d)", label, i, *c, next-1)
			}
		}
		if d.Call != nil && d.Content != "" {
			t.Errorf("%s: delta %d has both content and a call", label, i)
		}
	}
}

func compareWithParse(t *testing.T, label string, c replyCase, pieces []string) bool {
	t.Helper()
	wantContent, wantCalls, _ := ParseWith(c.f, c.text, rand.New(rand.NewPCG(7, 7)))
	content, calls := Collect(streamPieces(t, label, c.f, pieces))
	if lateFailures[c.name] {
		return true
	}
	if content != wantContent || fmt.Sprint(calls) != fmt.Sprint(wantCalls) {
		t.Errorf("%s: streamed %q %+v\n  Parse gives %q %+v", label, content, calls, wantContent, wantCalls)
		return false
	}
	return true
}

// TestStreamEverySplit feeds every reply in two pieces split at every byte,
// in three pieces split at every pair of bytes, and one byte at a time.
func TestStreamEverySplit(t *testing.T) {
	for _, c := range replyCases {
		n := len(c.text)
		for i := 0; i <= n; i++ {
			if !compareWithParse(t, fmt.Sprintf("%s split %d", c.name, i), c, []string{c.text[:i], c.text[i:]}) {
				break
			}
		}
		if testing.Short() {
			continue
		}
	three:
		for i := 0; i <= n; i++ {
			for j := i; j <= n; j++ {
				if !compareWithParse(t, fmt.Sprintf("%s split %d,%d", c.name, i, j), c, []string{c.text[:i], c.text[i:j], c.text[j:]}) {
					break three
				}
			}
		}
		bytes := make([]string, n)
		for i := range n {
			bytes[i] = c.text[i : i+1]
		}
		compareWithParse(t, c.name+" bytewise", c, bytes)
	}
}

// TestStreamRandomSplits feeds replies in random pieces, with empty ones.
func TestStreamRandomSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range replyCases {
		for k := range 200 {
			var pieces []string
			for s := c.text; s != ""; {
				m := min(len(s), r.IntN(8))
				pieces = append(pieces, s[:m])
				s = s[m:]
			}
			if !compareWithParse(t, fmt.Sprintf("%s random %d %q", c.name, k, pieces), c, pieces) {
				break
			}
		}
	}
}

// TestStreamNoMarkerContent checks that no content delta of a reply whose
// calls are well formed carries any part of a marker, and that text is
// not held back longer than needed.
func TestStreamNoMarkerContent(t *testing.T) {
	markers := []string{hermesOpen, hermesClose, pythonTag, dsCallsBegin, dsCallsEnd, dsCallBegin, dsCallEnd, dsSep}
	for _, c := range replyCases {
		if len(c.calls) == 0 || strings.Contains(c.content, "<") {
			continue
		}
		p := NewStreamParser(c.f)
		for i := range len(c.text) {
			for _, d := range p.Add(c.text[i : i+1]) {
				for _, m := range markers {
					if d.Call == nil && strings.Contains(d.Content, m[:2]) {
						t.Errorf("%s: content delta %q has a marker's start", c.name, d.Content)
					}
				}
			}
		}
	}
	// Text that cannot start a marker comes out at once.
	p := NewStreamParser(Hermes)
	if got := p.Add("Hello <b"); len(got) != 1 || got[0].Content != "Hello <b" {
		t.Errorf("Add(\"Hello <b\") = %+v", got)
	}
	if got := p.Add(" <tool_"); len(got) != 0 {
		t.Errorf("Add(\" <tool_\") = %+v, want it held back", got)
	}
	if got := p.Add("x"); len(got) != 1 || got[0].Content != " <tool_x" {
		t.Errorf("Add(\"x\") = %+v", got)
	}
}

// TestStreamIncremental checks that a call is announced as soon as its
// name and the start of its arguments are seen, and that the arguments
// then stream without waiting for the end of the call.
func TestStreamIncremental(t *testing.T) {
	for _, c := range []struct {
		f        Format
		head     string // announces the call
		args     []string
		tail     string
		wantName string
	}{
		{Hermes, "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {", []string{"\"city\": ", "\"Par", "is\"}"}, "}\n</tool_call>", "get_weather"},
		{Llama3JSON, "{\"name\": \"get_weather\", \"parameters\": {", []string{"\"city\": ", "\"Par", "is\"}"}, "}", "get_weather"},
		{DeepSeekR1, dsBegin + dsCall + "get_weather\n```json\n{", []string{"\"city\": ", "\"Par", "is\"}"}, "\n```" + dsCEnd + dsEnd, "get_weather"},
	} {
		p := NewStreamParser(c.f)
		ds := p.Add(c.head)
		var header *CallDelta
		for _, d := range ds {
			if d.Call != nil && d.Call.ID != "" {
				header = d.Call
			}
		}
		if header == nil || header.Name != c.wantName {
			t.Fatalf("%v: head did not announce the call: %+v", c.f, ds)
		}
		args := "{"
		for _, a := range c.args {
			ds := p.Add(a)
			if len(ds) != 1 || ds[0].Call == nil || ds[0].Call.Arguments != a {
				t.Errorf("%v: Add(%q) = %+v, want the fragment at once", c.f, a, ds)
			}
			args += a
		}
		ds = append(p.Add(c.tail), p.Finish()...)
		for _, d := range ds {
			if d.Call != nil || d.Content != "" {
				t.Errorf("%v: tail gave %+v", c.f, d)
			}
		}
		if args != `{"city": "Paris"}` {
			t.Errorf("args %q", args)
		}
	}
}

// TestStreamMalformedAfterAnnounce covers the one case where streaming and
// Parse differ: a call that goes wrong after it was announced.
func TestStreamMalformedAfterAnnounce(t *testing.T) {
	p := NewStreamParser(Hermes)
	ds := p.Add("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": ")
	ds = append(ds, p.Add("tru}}\n</tool_call> after")...)
	ds = append(ds, p.Finish()...)
	content, calls := Collect(ds)
	if len(calls) != 1 || calls[0].Arguments != `{"a": tru` {
		t.Errorf("calls %+v", calls)
	}
	if content != "}}\n after" {
		t.Errorf("content %q", content)
	}
	// Cut short: the call stays as far as it went.
	p = NewStreamParser(DeepSeekR1)
	ds = p.Add(dsBegin + dsCall + "f\n```json\n{\"a\": [1")
	ds = append(ds, p.Finish()...)
	content, calls = Collect(ds)
	if len(calls) != 1 || calls[0].Arguments != `{"a": [1` || content != "" {
		t.Errorf("cut short: %q %+v", content, calls)
	}
}
