package sampler

import (
	"strings"
	"testing"
)

type step struct {
	id   int32
	text string
}

// TestStopChecker feeds token ids and text increments and checks the text
// shown after each step and how generation ends.
func TestStopChecker(t *testing.T) {
	const eos = 99
	tests := []struct {
		name   string
		f      func(*Params)
		steps  []step
		shown  []string // after each step
		finish Finish   // after the last step
	}{
		{"plain text", nil,
			[]step{{1, "Hel"}, {2, "lo"}}, []string{"Hel", "lo"}, Finish{StopToken: -1}},
		{"eos hides its text", nil,
			[]step{{1, "Hi"}, {eos, "</s>"}}, []string{"Hi", ""}, Finish{Reason: FinishStop, StopToken: eos}},
		{"ignore_eos", func(p *Params) { p.IgnoreEOS = true },
			[]step{{eos, "</s>"}, {1, "x"}}, []string{"</s>", "x"}, Finish{StopToken: -1}},
		{"stop_token_ids even with ignore_eos", func(p *Params) { p.IgnoreEOS = true; p.StopTokenIDs = []int32{7} },
			[]step{{1, "a"}, {7, "<x>"}}, []string{"a", ""}, Finish{Reason: FinishStop, StopToken: 7}},
		{"include_stop_str_in_output shows the stop token", func(p *Params) { p.IncludeStopStr = true },
			[]step{{1, "a"}, {eos, "</s>"}}, []string{"a", "</s>"}, Finish{Reason: FinishStop, StopToken: eos}},
		{"max_tokens", func(p *Params) { p.MaxTokens = 2 },
			[]step{{1, "a"}, {2, "b"}}, []string{"a", "b"}, Finish{Reason: FinishLength, StopToken: -1}},
		{"max_tokens before eos", func(p *Params) { p.MaxTokens = 2 },
			[]step{{1, "a"}, {eos, ""}}, []string{"a", ""}, Finish{Reason: FinishLength, StopToken: -1}},
		{"stop string inside one token", func(p *Params) { p.Stop = StringList{"END"} },
			[]step{{1, "ab"}, {2, "cENDd"}}, []string{"ab", "c"}, Finish{Reason: FinishStop, StopString: "END", StopToken: -1}},
		{"stop string split across three tokens", func(p *Params) { p.Stop = StringList{"<|end|>"} },
			[]step{{1, "Hi <|"}, {2, "en"}, {3, "d|> more"}},
			[]string{"Hi ", "", ""}, Finish{Reason: FinishStop, StopString: "<|end|>", StopToken: -1}},
		{"false start is released", func(p *Params) { p.Stop = StringList{"<|end|>"} },
			[]step{{1, "a <|"}, {2, "en"}, {3, "try"}}, []string{"a ", "", "<|entry"}, Finish{StopToken: -1}},
		{"held text flushed at max_tokens", func(p *Params) { p.Stop = StringList{"STOP"}; p.MaxTokens = 2 },
			[]step{{1, "x"}, {2, "ST"}}, []string{"x", "ST"}, Finish{Reason: FinishLength, StopToken: -1}},
		{"held text flushed at eos", func(p *Params) { p.Stop = StringList{"STOP"} },
			[]step{{1, "xST"}, {eos, "</s>"}}, []string{"x", "ST"}, Finish{Reason: FinishStop, StopToken: eos}},
		{"stop string beats max_tokens", func(p *Params) { p.Stop = StringList{"ab"}; p.MaxTokens = 2 },
			[]step{{1, "a"}, {2, "bc"}}, []string{"", ""}, Finish{Reason: FinishStop, StopString: "ab", StopToken: -1}},
		{"earliest stop string wins", func(p *Params) { p.Stop = StringList{"world", "lo"} },
			[]step{{1, "hello world"}}, []string{"hel"}, Finish{Reason: FinishStop, StopString: "lo", StopToken: -1}},
		{"include_stop_str_in_output", func(p *Params) { p.Stop = StringList{"END"}; p.IncludeStopStr = true },
			[]step{{1, "aE"}, {2, "NDzz"}}, []string{"a", "END"}, Finish{Reason: FinishStop, StopString: "END", StopToken: -1}},
		{"multibyte stop string split mid-rune", func(p *Params) { p.Stop = StringList{"é!"} },
			[]step{{1, "caf"}, {2, "é"}, {3, "!x"}}, []string{"caf", "", ""},
			Finish{Reason: FinishStop, StopString: "é!", StopToken: -1}},
		{"overlapping prefixes", func(p *Params) { p.Stop = StringList{"aab"} },
			[]step{{1, "aa"}, {2, "a"}, {3, "b"}}, []string{"", "a", ""}, Finish{Reason: FinishStop, StopString: "aab", StopToken: -1}},
		// min_tokens: no stop token or stop string before N tokens; a stop
		// string must end in a token past min_tokens.
		{"min_tokens delays eos", func(p *Params) { p.MinTokens = 2 },
			[]step{{eos, ""}, {eos, ""}}, []string{"", ""}, Finish{Reason: FinishStop, StopToken: eos}},
		{"min_tokens ignores early stop strings", func(p *Params) { p.MinTokens = 2; p.Stop = StringList{"x"} },
			[]step{{1, "axb"}, {2, "c"}, {3, "dx"}}, []string{"axb", "c", "d"},
			Finish{Reason: FinishStop, StopString: "x", StopToken: -1}},
		{"min_tokens: a match may start early", func(p *Params) { p.MinTokens = 1; p.Stop = StringList{"xy"} },
			[]step{{1, "ax"}, {2, "yb"}}, []string{"a", ""}, Finish{Reason: FinishStop, StopString: "xy", StopToken: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.MaxTokens = 0
			if tc.f != nil {
				tc.f(&p)
			}
			if err := p.Validate(100); err != nil {
				t.Fatal(err)
			}
			c := NewStopChecker(&p, []int32{eos})
			var fin Finish
			for i, st := range tc.steps {
				var shown string
				shown, fin = c.Step(st.id, st.text)
				if shown != tc.shown[i] {
					t.Errorf("step %d (%q): shown %q, want %q", i, st.text, shown, tc.shown[i])
				}
			}
			if fin != tc.finish || c.Finished() != tc.finish {
				t.Errorf("finish %+v, want %+v", fin, tc.finish)
			}
		})
	}
}

// TestStopNeverShown streams text in every possible split and checks that
// the shown text is always the text before the first stop string.
func TestStopNeverShown(t *testing.T) {
	text := "one <stop> two </s> three"
	for _, stops := range [][]string{{"<stop>"}, {"</s>", "<stop>"}, {"two"}, {"o"}} {
		p := DefaultParams()
		p.MaxTokens = 0
		p.Stop = stops
		first := len(text)
		for _, s := range stops {
			if i := strings.Index(text, s); i >= 0 && i < first {
				first = i
			}
		}
		for cut1 := 0; cut1 <= len(text); cut1++ {
			for cut2 := cut1; cut2 <= len(text); cut2++ {
				c := NewStopChecker(&p, nil)
				var shown strings.Builder
				for i, piece := range []string{text[:cut1], text[cut1:cut2], text[cut2:]} {
					out, fin := c.Step(int32(i), piece)
					shown.WriteString(out)
					if fin.Reason != "" {
						break
					}
				}
				shown.WriteString(c.Flush())
				if got := shown.String(); got != text[:first] {
					t.Fatalf("stops %q, splits %d,%d: shown %q, want %q", stops, cut1, cut2, got, text[:first])
				}
			}
		}
	}
}

func TestStopAfterEnd(t *testing.T) {
	p := DefaultParams()
	p.MaxTokens = 1
	c := NewStopChecker(&p, nil)
	if _, fin := c.Step(1, "a"); fin.Reason != FinishLength {
		t.Fatal(fin)
	}
	if out, fin := c.Step(2, "b"); out != "" || fin.Reason != FinishLength {
		t.Errorf("after the end: %q %+v", out, fin)
	}
}
