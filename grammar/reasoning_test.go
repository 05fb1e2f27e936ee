package grammar

import "testing"

func TestWithReasoning(t *testing.T) {
	g := mustCompile(t, `root ::= "{" [0-9]+ "}"`)
	opt, err := WithReasoning(g, Reasoning{Start: "<think>", End: "</think>"})
	if err != nil {
		t.Fatal(err)
	}
	opened, err := WithReasoning(g, Reasoning{Start: "<think>", End: "</think>", Opened: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		g    *Grammar
		s    string
		want bool
	}{
		{opt, "{12}", true},
		{opt, "<think>\nhmm, </thin </ <<think> 日本 {1}\n</think>\n\n{12}", true},
		{opt, "<think></think>{1}", true},
		{opt, "<think>a</think>b</think>{1}", false}, // the block ends at the first </think>
		{opt, "<think>a{1}", false},
		{opt, "x{1}", false},
		{opt, "<think>a</think>" + "                 " + "{1}", false}, // over 16 blanks
		{opened, "hmm</think>\n{7}", true},
		{opened, "{7}", false},
		{opened, "<think>x</think>{7}", true}, // inside the block, "<think>" is text
	} {
		if got := matches(c.g, c.s); got != c.want {
			t.Errorf("%q: %v, want %v", c.s, got, c.want)
		}
	}
	// The inner grammar is untouched.
	if !matches(g, "{3}") || matches(g, "<think></think>{3}") {
		t.Error("WithReasoning changed its argument")
	}
}
