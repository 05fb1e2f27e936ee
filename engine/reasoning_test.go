package engine

import "testing"

// TestReasoningSplitter: thinking and answer come apart the same whatever
// the text's split into pieces.
func TestReasoningSplitter(t *testing.T) {
	cases := []struct {
		mode                ReasoningMode
		text, think, answer string
	}{
		{ReasoningOptional, "<think>\nhmm </thin no\n</think>\n\n{\"a\": 1}", "hmm </thin no\n", `{"a": 1}`},
		{ReasoningOptional, "\n<think>x</think>y", "x", "y"},
		{ReasoningOptional, "<thin", "", "<thin"},
		{ReasoningOptional, "<thinking>", "", "<thinking>"},
		{ReasoningOptional, "Hello <think>", "", "Hello <think>"},
		{ReasoningOptional, "<think>open to the end </th", "open to the end </th", ""},
		{ReasoningOpened, "\nstep 1</think>\n\nanswer", "step 1", "answer"},
		{ReasoningOpened, "never closed", "never closed", ""},
		{ReasoningNone, "<think>x</think>y", "", "<think>x</think>y"},
	}
	for _, c := range cases {
		for size := 1; size <= len(c.text); size++ {
			s := NewReasoningSplitter(c.mode)
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
