package sampler

import (
	"math"
	"slices"
	"testing"
)

// survivors samples once with processed logprobs of up to 20 tokens and
// returns the Top list: the tokens the draw was made from, with their
// final logprobs.
func survivors(t *testing.T, f func(*Params), prompt, out []int32, row []float32) Result {
	t.Helper()
	p := params(f)
	p.Logprobs, p.LogprobsMode = intp(20), ProcessedLogprobs
	s := newSampler(t, p, len(row), nil, prompt, out)
	r, err := s.Sample(slices.Clone(row))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type want struct {
	ids []int32   // survivors, best first
	lp  []float64 // their logprobs
}

// kept returns the want for the tokens ids of scaled logits xs (already
// divided by the temperature), renormalised over ids.
func kept(xs []float64, ids ...int32) want {
	v := make([]float64, len(ids))
	for i, id := range ids {
		v[i] = xs[id]
	}
	return want{ids: ids, lp: logSoftmaxOf(v...)}
}

func checkSurvivors(t *testing.T, r Result, w want) {
	t.Helper()
	if len(r.Top) != len(w.ids) {
		t.Fatalf("survivors %v, want ids %v", r.Top, w.ids)
	}
	for i, e := range r.Top {
		if e.ID != w.ids[i] || !near(e.Logprob, w.lp[i], 2e-7) {
			t.Errorf("survivor %d = %+v, want id %d logprob %.9f", i, e, w.ids[i], w.lp[i])
		}
	}
	if !slices.Contains(w.ids, r.ID) {
		t.Errorf("sampled %d, not a survivor", r.ID)
	}
	i := slices.Index(w.ids, r.ID)
	if !near(r.Logprob, w.lp[i], 2e-7) {
		t.Errorf("sampled logprob %v, want %v", r.Logprob, w.lp[i])
	}
}

func scaled(row []float32, temp float64) []float64 {
	out := make([]float64, len(row))
	for i, v := range row {
		out[i] = float64(v / float32(temp))
	}
	return out
}

// TestSamplingSteps checks temperature, min_p, top_k and top_p one at a
// time and jointly, with exact survivor sets and logprobs.
func TestSamplingSteps(t *testing.T) {
	ln := func(p ...float64) []float32 {
		out := make([]float32, len(p))
		for i, v := range p {
			out[i] = float32(math.Log(v))
		}
		return out
	}
	row := f32s(1, 3, 2, 0, -1, 2.5)
	probs := ln(0.1, 0.4, 0.2, 0.3) // best first: 1, 3, 2, 0
	tests := []struct {
		name string
		f    func(*Params)
		row  []float32
		want want
	}{
		{"temperature 1", nil, row, kept(scaled(row, 1), 1, 5, 2, 0, 3, 4)},
		{"temperature 0.5", func(p *Params) { p.Temperature = 0.5 }, row, kept(scaled(row, 0.5), 1, 5, 2, 0, 3, 4)},
		{"temperature 2", func(p *Params) { p.Temperature = 2 }, row, kept(scaled(row, 2), 1, 5, 2, 0, 3, 4)},
		{"tiny temperature raised to 0.01", func(p *Params) { p.Temperature = 0.001 }, f32s(0, 0.01, 0.02),
			kept(scaled(f32s(0, 0.01, 0.02), 0.01), 2, 1, 0)},
		// min_p 0.3: e^-1 = 0.37 survives, e^-2 = 0.14 does not.
		{"min_p", func(p *Params) { p.MinP = 0.3 }, f32s(0, -1, -2, -3), kept([]float64{0, -1, -2, -3}, 0, 1)},
		// Temperature comes first: at T=2 e^-1 becomes e^-0.5 = 0.61 > 0.5.
		{"temperature before min_p", func(p *Params) { p.MinP = 0.5; p.Temperature = 2 }, f32s(0, -1),
			kept([]float64{0, -0.5}, 0, 1)},
		{"min_p at T=1 for comparison", func(p *Params) { p.MinP = 0.5 }, f32s(0, -1), kept([]float64{0, -1}, 0)},
		{"top_k", func(p *Params) { p.TopK = 2 }, row, kept(scaled(row, 1), 1, 5)},
		{"top_k ties to lowest id", func(p *Params) { p.TopK = 2 }, f32s(1, 2, 2, 2), kept([]float64{1, 2, 2, 2}, 1, 2)},
		{"top_k -1 is off", func(p *Params) { p.TopK = -1 }, f32s(1, 2, 0), kept([]float64{1, 2, 0}, 1, 0, 2)},
		{"top_k = vocab is off", func(p *Params) { p.TopK = 3 }, f32s(1, 2, 0), kept([]float64{1, 2, 0}, 1, 0, 2)},
		// top_p 0.7 over 0.4, 0.3, 0.2, 0.1: 0 < 0.7 and 0.4 < 0.7 keep two.
		{"top_p", func(p *Params) { p.TopP = 0.7 }, probs, kept(scaled(probs, 1), 1, 3)},
		{"top_p keeps at least one", func(p *Params) { p.TopP = 0.01 }, probs, kept(scaled(probs, 1), 1)},
		{"top_p 0.75", func(p *Params) { p.TopP = 0.75 }, probs, kept(scaled(probs, 1), 1, 3, 2)},
		// Joint: top_p applies to the top_k's renormalised probabilities:
		// {0.4, 0.3} → {0.57, 0.43}, and 0.57 >= 0.5 cuts the second. Top_p
		// first would have kept both.
		{"top_k then top_p", func(p *Params) { p.TopK = 2; p.TopP = 0.5 }, probs, kept(scaled(probs, 1), 1)},
		{"top_p alone at 0.5", func(p *Params) { p.TopP = 0.5 }, probs, kept(scaled(probs, 1), 1, 3)},
		// min_p then top_k: min_p 0.6 cuts 0.3/0.4 = 0.75? no; 0.2/0.4 = 0.5 yes.
		{"min_p and top_k", func(p *Params) { p.MinP = 0.6; p.TopK = 3 }, probs, kept(scaled(probs, 1), 1, 3)},
		{"all truncations", func(p *Params) { p.Temperature = 0.5; p.MinP = 0.1; p.TopK = 3; p.TopP = 0.9 }, row,
			kept(scaled(row, 0.5), 1, 5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkSurvivors(t, survivors(t, tc.f, nil, nil, tc.row), tc.want)
		})
	}
}

// TestStepOrder: penalties come before temperature. With presence 1 on
// token 1 and T = 0.5, the logits become (1, 3-1)/0.5 = (2, 4); temperature
// first would give (2, 6-1) = (2, 5).
func TestStepOrder(t *testing.T) {
	r := survivors(t, func(p *Params) { p.PresencePenalty = 1; p.Temperature = 0.5 }, nil, []int32{1}, f32s(1, 3))
	vllm := logSoftmaxOf(2, 4)
	other := logSoftmaxOf(2, 5)
	lp := map[int32]float32{}
	for _, e := range r.Top {
		lp[e.ID] = e.Logprob
	}
	if !near(lp[0], vllm[0], 1e-7) || !near(lp[1], vllm[1], 1e-7) {
		t.Errorf("logprobs %v, want %v (penalty, then temperature)", lp, vllm)
	}
	if near(lp[0], other[0], 1e-3) {
		t.Errorf("logprobs %v match temperature-before-penalty %v", lp, other)
	}
	// Bias before the repetition penalty, then temperature: (-1+3)/2 = 1,
	// then /0.5 = 2 against 0/0.5 = 0.
	r = survivors(t, func(p *Params) {
		p.LogitBias = map[int32]float64{1: 3}
		p.RepetitionPenalty = 2
		p.Temperature = 0.5
	}, []int32{1}, nil, f32s(0, -1))
	want := logSoftmaxOf(0, 2)
	if r.Top[0].ID != 1 || !near(r.Top[0].Logprob, want[1], 1e-7) || !near(r.Top[1].Logprob, want[0], 1e-7) {
		t.Errorf("top %v, want token 1 at %v and 0 at %v", r.Top, want[1], want[0])
	}
}

// TestGreedy: the argmax of the processed logits, ties to the lowest id;
// min_p/top_k/top_p are ignored; no random numbers are drawn.
func TestGreedy(t *testing.T) {
	tests := []struct {
		name string
		f    func(*Params)
		out  []int32
		row  []float32
		want int32
	}{
		{"argmax", nil, nil, f32s(1, 3, 2), 1},
		{"ties to lowest id", nil, nil, f32s(1, 3, 3, 2), 1},
		{"-Inf entries", nil, nil, f32s(float32(math.Inf(-1)), -5, float32(math.Inf(-1))), 1},
		{"truncations ignored", func(p *Params) { p.TopK = 1; p.MinP = 1; p.TopP = 0.1 }, nil, f32s(1, 3, 2), 1},
		{"penalty changes the argmax", func(p *Params) { p.PresencePenalty = 2 }, []int32{1}, f32s(1, 3, 2), 2},
		{"bias changes the argmax", func(p *Params) { p.LogitBias = map[int32]float64{0: 2.5} }, nil, f32s(1, 3, 2), 0},
		{"allowed", func(p *Params) { p.AllowedTokenIDs = []int32{0, 2} }, nil, f32s(1, 3, 2), 2},
		{"dense path", func(p *Params) { p.Processors = []LogitsProcessor{noop{}} }, nil, f32s(1, 3, 3, 2), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := params(tc.f)
			p.Temperature = 0
			s := newSampler(t, p, len(tc.row), nil, nil, tc.out)
			before := s.rng
			r, err := s.Sample(slices.Clone(tc.row))
			if err != nil {
				t.Fatal(err)
			}
			if r.ID != tc.want {
				t.Errorf("got %d, want %d", r.ID, tc.want)
			}
			if s.rng != before {
				t.Error("greedy sampling drew a random number")
			}
			if out := s.Output(); out[len(out)-1] != r.ID {
				t.Errorf("history %v does not end with %d", out, r.ID)
			}
		})
	}
}

// TestLogprobsModes: raw logprobs describe the model's row; processed ones
// what the token was drawn from. Ranks count tokens at least as likely.
func TestLogprobsModes(t *testing.T) {
	row := f32s(1, 3, 2, 0, -1, 2.5)
	rawLP := logSoftmaxOf(1, 3, 2, 0, -1, 2.5)
	setup := func(p *Params) {
		p.Logprobs = intp(3)
		p.LogitBias = map[int32]float64{1: -10} // pushes token 1 down
		p.TopK = 2
		p.Temperature = 0.5
	}
	for _, mode := range []string{"", RawLogprobs, ProcessedLogprobs} {
		t.Run("mode "+mode, func(t *testing.T) {
			p := params(setup)
			p.LogprobsMode = mode
			s := newSampler(t, p, len(row), nil, nil, nil)
			for range 20 {
				r, err := s.Sample(slices.Clone(row))
				if err != nil {
					t.Fatal(err)
				}
				if r.ID != 5 && r.ID != 2 {
					t.Fatalf("sampled %d outside the top_k {5, 2} after the bias", r.ID)
				}
				if mode == ProcessedLogprobs {
					w := kept([]float64{2, (3 - 10) / 0.5, 4, 0, -2, 5}, 5, 2)
					checkSurvivors(t, r, w)
					if wantRank := slices.Index(w.ids, r.ID) + 1; r.Rank != wantRank {
						t.Errorf("rank %d, want %d", r.Rank, wantRank)
					}
					continue
				}
				// raw: top 3 of the model's row, whatever was sampled
				wantTop := []int32{1, 5, 2}
				for i, e := range r.Top {
					if e.ID != wantTop[i] || !near(e.Logprob, rawLP[e.ID], 2e-7) {
						t.Errorf("raw top %v, want ids %v with logprobs %v", r.Top, wantTop, rawLP)
					}
				}
				if !near(r.Logprob, rawLP[r.ID], 2e-7) {
					t.Errorf("raw logprob %v of %d, want %v", r.Logprob, r.ID, rawLP[r.ID])
				}
				if wantRank := slices.Index(wantTop, r.ID) + 1; r.Rank != wantRank {
					t.Errorf("raw rank of %d = %d, want %d", r.ID, r.Rank, wantRank)
				}
			}
		})
	}
}

// TestRawRankOutsideTop: the sampled token's raw rank when it is far from
// the raw top list (allowed_token_ids forces a poor token).
func TestRawRankOutsideTop(t *testing.T) {
	row := f32s(5, 4, 4, 3, 2, 1, 0)
	for _, extra := range []func(*Params){nil, func(p *Params) { p.Processors = []LogitsProcessor{noop{}} }} {
		s := newSampler(t, params(func(p *Params) {
			p.Logprobs = intp(1)
			p.AllowedTokenIDs = []int32{4}
			if extra != nil {
				extra(p)
			}
		}), len(row), nil, nil, nil)
		r, err := s.Sample(slices.Clone(row))
		if err != nil {
			t.Fatal(err)
		}
		lp := logSoftmaxOf(5, 4, 4, 3, 2, 1, 0)
		if r.ID != 4 || r.Rank != 5 || !near(r.Logprob, lp[4], 2e-7) || len(r.Top) != 1 || r.Top[0].ID != 0 {
			t.Errorf("got %+v, want id 4 rank 5 logprob %v top [0]", r, lp[4])
		}
	}
	// Ties: rank counts every token at least as likely.
	s := newSampler(t, params(func(p *Params) { p.Logprobs = intp(0); p.Temperature = 0 }), 4, nil, nil, nil)
	r, _ := s.Sample(f32s(1, 2, 2, 0))
	if r.ID != 1 || r.Rank != 2 || len(r.Top) != 0 {
		t.Errorf("got %+v, want id 1 with rank 2 (tied) and no top list", r)
	}
}

// TestGreedyProcessedLogprobs: greedy processed logprobs are the
// log-softmax after penalties, without temperature.
func TestGreedyProcessedLogprobs(t *testing.T) {
	row := f32s(1, 3, 2, 0)
	for _, dense := range []bool{false, true} {
		p := params(func(p *Params) {
			p.Temperature = 0
			p.Logprobs, p.LogprobsMode = intp(2), ProcessedLogprobs
			p.FrequencyPenalty = 1.5
			if dense {
				p.Processors = []LogitsProcessor{noop{}}
			}
		})
		s := newSampler(t, p, len(row), nil, nil, []int32{1})
		r, err := s.Sample(slices.Clone(row))
		if err != nil {
			t.Fatal(err)
		}
		lp := logSoftmaxOf(1, 1.5, 2, 0)
		if r.ID != 2 || r.Rank != 1 || !near(r.Logprob, lp[2], 2e-7) ||
			r.Top[0].ID != 2 || r.Top[1].ID != 1 || !near(r.Top[1].Logprob, lp[1], 2e-7) {
			t.Errorf("dense=%v: got %+v, want id 2 at %v then 1 at %v", dense, r, lp[2], lp[1])
		}
	}
}
