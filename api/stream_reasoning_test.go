package api

import (
	"testing"

	"wasmllm/engine"
)

// TestReasoningSplitter: thinking and answer come apart the same whatever
// the text's split into pieces.
func TestReasoningSplitter(t *testing.T) {
	cases := []struct {
		mode                engine.ReasoningMode
		text, think, answer string
	}{
		{engine.ReasoningOptional, "<think>\nhmm </thin no\n</think>\n\n{\"a\": 1}", "hmm </thin no\n", `{"a": 1}`},
		{engine.ReasoningOptional, "\n<think>x</think>y", "x", "y"},
		{engine.ReasoningOptional, "<thin", "", "<thin"},
		{engine.ReasoningOptional, "<thinking>", "", "<thinking>"},
		{engine.ReasoningOptional, "Hello <think>", "", "Hello <think>"},
		{engine.ReasoningOptional, "<think>open to the end </th", "open to the end </th", ""},
		{engine.ReasoningOpened, "\nstep 1</think>\n\nanswer", "step 1", "answer"},
		{engine.ReasoningOpened, "never closed", "never closed", ""},
		{engine.ReasoningNone, "<think>x</think>y", "", "<think>x</think>y"},
	}
	for _, c := range cases {
		for size := 1; size <= len(c.text); size++ {
			s := newReasoningSplitter(c.mode)
			var think, answer string
			for i := 0; i < len(c.text); i += size {
				r, a := s.Add(c.text[i:min(i+size, len(c.text))])
				think, answer = think+r, answer+a
			}
			r, a := s.Flush()
			think, answer = think+r, answer+a
			if think != c.think || answer != c.answer {
				t.Errorf("mode %d %q in pieces of %d: thinking %q answer %q, want %q %q", c.mode, c.text, size, think, answer, c.think, c.answer)
				break
			}
		}
	}
}

// FuzzReasoningSplitter: however a reply is cut into stream deltas, the
// thinking and answer they add up to are the whole reply's, in every mode.
func FuzzReasoningSplitter(f *testing.F) {
	for _, s := range []string{"<think>\nhm</think>\n\nyes", "  <thi", "no think", "<think>a</thi", "\n\n<think></think>x</think>y"} {
		f.Add(s, []byte{1, 3, 2}, uint8(0))
		f.Add(s, []byte{5}, uint8(2))
	}
	f.Fuzz(func(t *testing.T, text string, cuts []byte, mode uint8) {
		m := engine.ReasoningMode(mode % 3)
		whole := newReasoningSplitter(m)
		wr, wc := whole.Add(text)
		fr, fc := whole.Flush()
		wr, wc = wr+fr, wc+fc
		s := newReasoningSplitter(m)
		var r, c string
		rest := text
		for i := 0; rest != ""; i++ {
			n := len(rest)
			if i < len(cuts) {
				n = min(n, int(cuts[i]%8)+1)
			}
			dr, dc := s.Add(rest[:n])
			r, c, rest = r+dr, c+dc, rest[n:]
		}
		fr, fc = s.Flush()
		r, c = r+fr, c+fc
		if r != wr || c != wc {
			t.Fatalf("mode %d, %q cut by %v: streamed (%q, %q), whole (%q, %q)", m, text, cuts, r, c, wr, wc)
		}
	})
}
