package sampler

import (
	"errors"
	"flag"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	const V = 100
	tests := []struct {
		param string // "" for valid
		f     func(*Params)
	}{
		{"", nil},
		{"", func(p *Params) { p.Temperature = 0 }},
		{"", func(p *Params) { p.Temperature = 2; p.TopP = 1; p.TopK = V; p.MinP = 1 }},
		{"temperature", func(p *Params) { p.Temperature = -0.1 }},
		{"temperature", func(p *Params) { p.Temperature = 2.5 }},
		{"temperature", func(p *Params) { p.Temperature = math.NaN() }},
		{"top_p", func(p *Params) { p.TopP = 0 }},
		{"top_p", func(p *Params) { p.TopP = 1.01 }},
		{"top_p", func(p *Params) { p.TopP = math.NaN() }},
		{"", func(p *Params) { p.TopK = -1 }},
		{"top_k", func(p *Params) { p.TopK = -2 }},
		{"top_k", func(p *Params) { p.TopK = V + 1 }},
		{"min_p", func(p *Params) { p.MinP = -0.1 }},
		{"min_p", func(p *Params) { p.MinP = 1.5 }},
		{"repetition_penalty", func(p *Params) { p.RepetitionPenalty = 0 }},
		{"repetition_penalty", func(p *Params) { p.RepetitionPenalty = math.Inf(1) }},
		{"frequency_penalty", func(p *Params) { p.FrequencyPenalty = 2.1 }},
		{"presence_penalty", func(p *Params) { p.PresencePenalty = -3 }},
		{"presence_penalty", func(p *Params) { p.PresencePenalty = math.NaN() }},
		{"logit_bias", func(p *Params) { p.LogitBias = map[int32]float64{V: 1} }},
		{"logit_bias", func(p *Params) { p.LogitBias = map[int32]float64{-1: 1} }},
		{"logit_bias", func(p *Params) { p.LogitBias = map[int32]float64{3: 101} }},
		{"logit_bias", func(p *Params) { p.LogitBias = map[int32]float64{3: math.NaN()} }},
		{"", func(p *Params) { p.LogitBias = map[int32]float64{3: -100, 4: 100} }},
		{"allowed_token_ids", func(p *Params) { p.AllowedTokenIDs = []int32{} }},
		{"allowed_token_ids", func(p *Params) { p.AllowedTokenIDs = []int32{1, V} }},
		{"bad_words", func(p *Params) { p.BadWords = []string{"a", ""}; p.BadWordIDs = [][]int32{{1}} }},
		{"bad_words", func(p *Params) { p.BadWords = []string{"a"} }},
		{"bad_words", func(p *Params) { p.BadWords = []string{"a"}; p.BadWordIDs = [][]int32{{}} }},
		{"bad_words", func(p *Params) { p.BadWords = []string{"a"}; p.BadWordIDs = [][]int32{{1, V}} }},
		{"min_tokens", func(p *Params) { p.MinTokens = -1 }},
		{"min_tokens", func(p *Params) { p.MinTokens = 20; p.MaxTokens = 10 }},
		{"", func(p *Params) { p.MinTokens = 20; p.MaxTokens = 0 }},
		{"max_tokens", func(p *Params) { p.MaxTokens = -1 }},
		{"logprobs", func(p *Params) { p.Logprobs = intp(21) }},
		{"logprobs", func(p *Params) { p.Logprobs = intp(-1) }},
		{"", func(p *Params) { p.Logprobs = intp(0) }},
		{"logprobs_mode", func(p *Params) { p.LogprobsMode = "raw_logits" }},
		{"stop", func(p *Params) { p.Stop = StringList{"x", ""} }},
		{"stop_token_ids", func(p *Params) { p.StopTokenIDs = []int32{V} }},
		{"processors", func(p *Params) { p.Processors = []LogitsProcessor{nil} }},
	}
	for _, tc := range tests {
		p := DefaultParams()
		if tc.f != nil {
			tc.f(&p)
		}
		err := p.Validate(V)
		var pe *ParamError
		switch {
		case tc.param == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", p, err)
		case tc.param != "" && (!errors.As(err, &pe) || pe.Param != tc.param):
			t.Errorf("want a ParamError for %s, got %v", tc.param, err)
		case tc.param != "" && !strings.Contains(err.Error(), tc.param):
			t.Errorf("error %q does not name %s", err, tc.param)
		}
	}
	// New validates too, and checks eos and prompt ids.
	if _, err := New(DefaultParams(), 10, []int32{10}, nil); err == nil || !strings.Contains(err.Error(), "eos") {
		t.Errorf("eos out of range: %v", err)
	}
	if _, err := New(DefaultParams(), 10, nil, []int32{3, -1}); err == nil || !strings.Contains(err.Error(), "prompt") {
		t.Errorf("prompt out of range: %v", err)
	}
	if _, err := New(DefaultParams(), 0, nil, nil); err == nil {
		t.Error("vocab 0 accepted")
	}
}

func TestSampleInputErrors(t *testing.T) {
	s := newSampler(t, params(nil), 4, nil, nil, nil)
	var re *RowError
	if _, err := s.Sample(f32s(1, 2, 3)); !errors.As(err, &re) || re.Want != 4 {
		t.Errorf("short row: %v", err)
	}
	for _, bad := range []float32{float32(math.NaN()), inf} {
		for _, f := range []func(*Params){
			nil,
			func(p *Params) { p.Temperature = 0 },
			func(p *Params) { p.Temperature = 0; p.Logprobs = intp(2) },
			func(p *Params) { p.TopK = 2 },
			func(p *Params) { p.Logprobs = intp(1) },
			func(p *Params) { p.PresencePenalty = 1 },
			func(p *Params) { p.AllowedTokenIDs = []int32{2, 3} },
			func(p *Params) { p.Processors = []LogitsProcessor{noop{}} },
		} {
			s := newSampler(t, params(f), 5, nil, nil, []int32{2})
			_, err := s.Sample(f32s(1, 2, bad, 3, 0))
			var le *LogitError
			if !errors.As(err, &le) || le.Index != 2 {
				t.Errorf("%+v with logit %v: got %v, want a LogitError at 2", s.p, bad, err)
			}
			if len(s.Output()) != 1 {
				t.Errorf("a failed step changed the history: %v", s.Output())
			}
		}
	}
	// A processor overflowing to +Inf.
	s = newSampler(t, params(func(p *Params) { p.RepetitionPenalty = 0.01 }), 3, nil, []int32{1}, nil)
	var le *LogitError
	if _, err := s.Sample(f32s(0, 3e38, 1)); !errors.As(err, &le) || le.Index != 1 {
		t.Errorf("overflowing penalty: %v", err)
	}
	// Everything masked.
	for _, temp := range []float64{0, 1} {
		s = newSampler(t, params(func(p *Params) {
			p.Temperature = temp
			p.AllowedTokenIDs = []int32{1}
			p.BadWordIDs = [][]int32{{1}}
			p.BadWords = []string{"x"}
		}), 3, nil, nil, nil)
		if _, err := s.Sample(f32s(0, 1, 2)); !errors.Is(err, ErrAllMasked) {
			t.Errorf("T=%v all masked: %v", temp, err)
		}
	}
	n := float32(math.Inf(-1))
	for _, temp := range []float64{0, 1} {
		s = newSampler(t, params(func(p *Params) { p.Temperature = temp }), 3, nil, nil, nil)
		if _, err := s.Sample(f32s(n, n, n)); !errors.Is(err, ErrAllMasked) {
			t.Errorf("T=%v row of -Inf: %v", temp, err)
		}
	}
	if err := s.Accept(3); err == nil {
		t.Error("Accept out of range")
	}
}

func TestParseParams(t *testing.T) {
	p, err := ParseParams([]byte(`{"temperature":0.7,"top_k":40,"logit_bias":{"5":-100},"stop":"END","seed":7,"logprobs":3,"bad_words":["a b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultParams()
	want.Temperature, want.TopK, want.Seed, want.Logprobs = 0.7, 40, i64p(7), intp(3)
	want.LogitBias = map[int32]float64{5: -100}
	want.Stop = StringList{"END"}
	want.BadWords = []string{"a b"}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got %+v\nwant %+v", p, want)
	}
	if _, err := ParseParams([]byte(`{"top_kk":3}`)); err == nil || !strings.Contains(err.Error(), "top_kk") {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := ParseParams([]byte(`{"stop":[1]}`)); err == nil {
		t.Error("stop of numbers accepted")
	}
	var q Params
	if err := q.UnmarshalJSON([]byte(`{"top_p":0.5,"stop":["a","b"]}`)); err != nil || q.Temperature != 1 || q.TopP != 0.5 || len(q.Stop) != 2 || q.RepetitionPenalty != 1 {
		t.Errorf("UnmarshalJSON: %+v %v", q, err)
	}
}

func TestBindFlags(t *testing.T) {
	p := DefaultParams()
	p.Temperature = 0 // the CLI's default
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	p.BindFlags(fs)
	err := fs.Parse([]string{
		"-temperature", "0.8", "-top-k", "40", "-top-p", "0.9", "-min-p", "0.05", "-seed", "7",
		"-repetition-penalty", "1.1", "-frequency-penalty", "0.5", "-presence-penalty", "-0.5",
		"-logit-bias", `{"5":-100}`, "-allowed-token-ids", "1,2,3", "-bad-words", `["a b","c"]`,
		"-min-tokens", "2", "-logprobs", "5", "-logprobs-mode", "processed_logprobs",
		"-stop", `["\n\n"]`, "-stop", "END", "-stop-token-ids", "[7, 8]", "-ignore-eos", "-max-tokens", "64",
		"-include-stop-str-in-output",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Params{
		Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, Seed: i64p(7),
		RepetitionPenalty: 1.1, FrequencyPenalty: 0.5, PresencePenalty: -0.5,
		LogitBias: map[int32]float64{5: -100}, AllowedTokenIDs: []int32{1, 2, 3},
		BadWords: []string{"a b", "c"}, MinTokens: 2, Logprobs: intp(5), LogprobsMode: ProcessedLogprobs,
		Stop: StringList{"\n\n", "END"}, StopTokenIDs: []int32{7, 8}, IgnoreEOS: true, MaxTokens: 64,
		IncludeStopStr: true,
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
	// Defaults come from p; every parameter has a flag.
	q := DefaultParams()
	q.Temperature = 0
	fs = flag.NewFlagSet("generate", flag.ContinueOnError)
	q.BindFlags(fs)
	if err := fs.Parse(nil); err != nil || q.Temperature != 0 || q.TopP != 1 {
		t.Errorf("defaults: %+v %v", q, err)
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	for _, n := range []string{"temperature", "top-p", "top-k", "min-p", "seed", "repetition-penalty",
		"frequency-penalty", "presence-penalty", "logit-bias", "allowed-token-ids", "bad-words", "min-tokens",
		"logprobs", "logprobs-mode", "stop", "stop-token-ids", "ignore-eos", "max-tokens"} {
		if !slices.Contains(names, n) {
			t.Errorf("no -%s flag", n)
		}
	}
	for _, bad := range [][]string{{"-seed", "x"}, {"-logit-bias", "{5:1}"}, {"-allowed-token-ids", "1,a"}, {"-bad-words", `["a"`}, {"-logprobs", "x"}} {
		fs := flag.NewFlagSet("g", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		r := DefaultParams()
		r.BindFlags(fs)
		if err := fs.Parse(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestTokenizeBadWords(t *testing.T) {
	vocab := map[string][]int32{
		"hello": {10}, " hello": {11}, // a distinct word-start token: both forms
		"the cat": {20, 21}, " the cat": {22, 21},
		"xyz": {30, 31}, " xyz": {32}, // different length: only the plain form
		"q": {40}, " q": {40}, // same first token: only the plain form
	}
	enc := func(s string) ([]int32, error) {
		if ids, ok := vocab[s]; ok {
			return ids, nil
		}
		return nil, nil
	}
	got, err := TokenizeBadWords([]string{"  hello", "the cat", "xyz", "q"}, enc)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{10}, {11}, {20, 21}, {22, 21}, {30, 31}, {40}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := TokenizeBadWords([]string{"nothing"}, enc); err == nil {
		t.Error("a word with no tokens accepted")
	}
	if _, err := TokenizeBadWords([]string{""}, enc); err == nil {
		t.Error("empty word accepted")
	}
}
