package sampler

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// setRow is a custom processor that records the row it sees and then sets
// some logits.
type setRow struct {
	seen []float32
	set  map[int32]float32
}

func (c *setRow) Process(row []float32, _ []int32) error {
	c.seen = slices.Clone(row)
	for id, v := range c.set {
		row[id] = v
	}
	return nil
}

// TestProcessorSteps checks each processor, and pairs of them, on small
// rows with exact float32 results, against the dense path, the sparse path
// (through greedy processed logprobs) and the reference.
func TestProcessorSteps(t *testing.T) {
	n := float32(math.Inf(-1))
	row := f32s(2, -2, 3, 0, 1)
	tests := []struct {
		name        string
		p           func(*Params)
		eos, prompt []int32
		out         []int32
		want        []float32
	}{
		{name: "none", want: row},
		{name: "allowed_token_ids", p: func(p *Params) { p.AllowedTokenIDs = []int32{3, 1} },
			want: f32s(n, -2, n, 0, n)},
		{name: "bad_words single token", p: func(p *Params) { p.BadWordIDs = [][]int32{{2}} }, want: f32s(2, -2, n, 0, 1)},
		{name: "bad_words prefix matches", p: func(p *Params) { p.BadWordIDs = [][]int32{{0, 1, 4}} },
			out: []int32{3, 0, 1}, want: f32s(2, -2, 3, 0, n)},
		{name: "bad_words prefix differs", p: func(p *Params) { p.BadWordIDs = [][]int32{{0, 1, 4}} },
			out: []int32{0, 2}, want: row},
		{name: "bad_words prefix longer than output", p: func(p *Params) { p.BadWordIDs = [][]int32{{0, 1, 4}} },
			out: []int32{1}, want: row},
		{name: "logit_bias", p: func(p *Params) { p.LogitBias = map[int32]float64{1: -100, 3: 0.5} },
			want: f32s(2, -102, 3, 0.5, 1)},
		{name: "min_tokens bans stop and eos", p: func(p *Params) { p.MinTokens = 2; p.StopTokenIDs = []int32{0} },
			eos: []int32{4}, out: []int32{2}, want: f32s(n, -2, 3, 0, n)},
		{name: "min_tokens reached", p: func(p *Params) { p.MinTokens = 2; p.StopTokenIDs = []int32{0} },
			eos: []int32{4}, out: []int32{2, 2}, want: row},
		{name: "repetition_penalty over prompt and output", p: func(p *Params) { p.RepetitionPenalty = 2 },
			prompt: []int32{0, 1}, out: []int32{3}, want: f32s(1, -4, 3, 0, 1)},
		{name: "repetition_penalty below 1", p: func(p *Params) { p.RepetitionPenalty = 0.5 },
			prompt: []int32{0, 1}, want: f32s(4, -1, 3, 0, 1)},
		{name: "frequency_penalty counts output only", p: func(p *Params) { p.FrequencyPenalty = 0.5 },
			prompt: []int32{0}, out: []int32{2, 2, 4}, want: f32s(2, -2, 2, 0, 0.5)},
		{name: "presence_penalty output only", p: func(p *Params) { p.PresencePenalty = 0.25 },
			prompt: []int32{0}, out: []int32{2, 2, 4}, want: f32s(2, -2, 2.75, 0, 0.75)},
		{name: "negative presence_penalty", p: func(p *Params) { p.PresencePenalty = -1 },
			out: []int32{1}, want: f32s(2, -1, 3, 0, 1)},
		// Order: logit_bias before the repetition penalty: (-2+3)/2, not -2*2+3.
		{name: "bias then repetition", p: func(p *Params) { p.LogitBias = map[int32]float64{1: 3}; p.RepetitionPenalty = 2 },
			prompt: []int32{1}, want: f32s(2, 0.5, 3, 0, 1)},
		// Order: repetition before frequency: 3/2-1, not (3-1)/2.
		{name: "repetition then frequency", p: func(p *Params) { p.RepetitionPenalty = 2; p.FrequencyPenalty = 1 },
			out: []int32{2}, want: f32s(2, -2, 0.5, 0, 1)},
		// Order: frequency then presence both subtract: 3 - 2·0.5 - 1.
		{name: "frequency and presence", p: func(p *Params) { p.FrequencyPenalty = 0.5; p.PresencePenalty = 1 },
			out: []int32{2, 2}, want: f32s(2, -2, 1, 0, 1)},
		// A banned token stays banned through bias and penalties.
		{name: "ban beats bias", p: func(p *Params) {
			p.BadWordIDs = [][]int32{{2}}
			p.LogitBias = map[int32]float64{2: 100}
			p.RepetitionPenalty = 0.5
		}, out: []int32{2}, want: f32s(2, -2, n, 0, 1)},
		{name: "allowed then bias", p: func(p *Params) {
			p.AllowedTokenIDs = []int32{0, 1}
			p.LogitBias = map[int32]float64{1: 5, 4: 5}
		}, want: f32s(2, 3, n, n, n)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := params(tc.p)
			p.Temperature = 0
			dense := newSampler(t, p, len(row), tc.eos, tc.prompt, tc.out)
			got := slices.Clone(row)
			if err := dense.processRow(got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("processed row %v, want %v", got, tc.want)
			}
			ref := reference(p, len(row), tc.eos, tc.prompt, tc.out, row)
			if !slices.Equal(ref.processed, tc.want) {
				t.Errorf("reference row %v, want %v", ref.processed, tc.want)
			}
			// The sparse path: processed logprobs of every token.
			p.Logprobs, p.LogprobsMode = intp(len(row)), ProcessedLogprobs
			sparse := newSampler(t, p, len(row), tc.eos, tc.prompt, tc.out)
			r, err := sparse.Sample(slices.Clone(row))
			if err != nil {
				t.Fatal(err)
			}
			var finite []float64
			for _, v := range tc.want {
				if !math.IsInf(float64(v), -1) {
					finite = append(finite, float64(v))
				}
			}
			if len(r.Top) != len(finite) {
				t.Fatalf("top %v: %d entries, want %d", r.Top, len(r.Top), len(finite))
			}
			lse := float64(tc.want[r.Top[0].ID]) - logSoftmaxOf(finite...)[slices.Index(finite, float64(tc.want[r.Top[0].ID]))]
			for _, e := range r.Top {
				if w := float64(tc.want[e.ID]) - lse; !near(e.Logprob, w, 1e-6) {
					t.Errorf("sparse logprob of %d = %v, want %v", e.ID, e.Logprob, w)
				}
			}
		})
	}
}

// TestCustomProcessorPosition: a custom processor sees the row after
// allowed/bad_words/logit_bias/min_tokens and before the penalties, which
// then apply to what it wrote.
func TestCustomProcessorPosition(t *testing.T) {
	c := &setRow{set: map[int32]float32{1: 4}}
	p := params(func(p *Params) {
		p.LogitBias = map[int32]float64{0: 1}
		p.MinTokens = 1
		p.RepetitionPenalty = 2
		p.Processors = []LogitsProcessor{c}
	})
	s := newSampler(t, p, 4, []int32{3}, []int32{0, 1}, nil)
	row := f32s(1, 1, 1, 1)
	if err := s.processRow(row); err != nil {
		t.Fatal(err)
	}
	if want := f32s(2, 1, 1, float32(math.Inf(-1))); !slices.Equal(c.seen, want) {
		t.Errorf("custom processor saw %v, want %v (bias and min_tokens applied, no penalty yet)", c.seen, want)
	}
	if want := f32s(1, 2, 1, float32(math.Inf(-1))); !slices.Equal(row, want) {
		t.Errorf("row %v, want %v (penalty applied to the custom processor's output)", row, want)
	}
}

type failing struct{}

func (failing) Process([]float32, []int32) error { return errors.New("boom") }

type nanWriter struct{}

func (nanWriter) Process(row []float32, _ []int32) error { row[2] = float32(math.NaN()); return nil }

func TestCustomProcessorErrors(t *testing.T) {
	s := newSampler(t, params(func(p *Params) { p.Processors = []LogitsProcessor{noop{}, failing{}} }), 4, nil, nil, nil)
	if _, err := s.Sample(f32s(1, 2, 3, 4)); err == nil || len(s.Output()) != 0 {
		t.Fatalf("err %v, output %v: want the processor's error and no token", err, s.Output())
	}
	s = newSampler(t, params(func(p *Params) { p.Processors = []LogitsProcessor{nanWriter{}} }), 4, nil, nil, nil)
	_, err := s.Sample(f32s(1, 2, 3, 4))
	var le *LogitError
	if !errors.As(err, &le) || le.Index != 2 {
		t.Fatalf("err %v, want a LogitError at 2", err)
	}
}
