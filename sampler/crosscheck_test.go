package sampler

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// randomCase draws a vocabulary, a prompt and a request using r.
func randomCase(r *rand.Rand) (p Params, vocab int, eos, prompt []int32) {
	vocab = 20 + r.IntN(400)
	pick := func(vs ...float64) float64 { return vs[r.IntN(len(vs))] }
	id := func() int32 { return int32(r.IntN(vocab)) }
	p = DefaultParams()
	p.MaxTokens = 0
	p.Seed = i64p(r.Int64())
	p.Temperature = pick(0, 0.3, 0.7, 1, 1.5)
	p.TopK = []int{0, 0, 1, 5, 20, -1}[r.IntN(6)]
	p.TopP = pick(1, 1, 0.9, 0.5)
	p.MinP = pick(0, 0, 0.05, 0.2)
	p.RepetitionPenalty = pick(1, 1, 1.3, 0.8)
	p.FrequencyPenalty = pick(0, 0, 0.5, -0.5)
	p.PresencePenalty = pick(0, 0, 0.7, -0.3)
	if r.IntN(3) == 0 {
		p.LogitBias = map[int32]float64{}
		for range 1 + r.IntN(4) {
			p.LogitBias[id()] = pick(-100, -2, 1, 5)
		}
	}
	if r.IntN(5) == 0 {
		for range 1 + r.IntN(30) {
			p.AllowedTokenIDs = append(p.AllowedTokenIDs, id())
		}
	}
	if r.IntN(3) == 0 {
		p.BadWords = []string{"w"}
		for range 1 + r.IntN(3) {
			seq := []int32{id()}
			for r.IntN(2) == 0 {
				seq = append(seq, id())
			}
			p.BadWordIDs = append(p.BadWordIDs, seq)
		}
	}
	if r.IntN(3) == 0 {
		p.MinTokens = r.IntN(4)
		p.StopTokenIDs = []int32{id()}
	}
	switch r.IntN(4) {
	case 1:
		p.Logprobs = intp(r.IntN(21))
	case 2:
		p.Logprobs, p.LogprobsMode = intp(r.IntN(21)), ProcessedLogprobs
	case 3:
		p.Logprobs, p.LogprobsMode = intp(r.IntN(21)), RawLogprobs
	}
	eos = []int32{id()}
	for range r.IntN(20) {
		prompt = append(prompt, id())
	}
	return
}

func randomRow(r *rand.Rand, vocab int) []float32 {
	row := make([]float32, vocab)
	scale := []float64{0.5, 2, 5}[r.IntN(3)]
	for i := range row {
		row[i] = float32(r.NormFloat64() * scale)
	}
	if r.IntN(4) == 0 { // repeated values: ties
		for i := range row {
			row[i] = float32(math.Round(float64(row[i])))
		}
	}
	return row
}

// topList is the expected top-n of a log-softmax: best first, ties to the
// lowest id, -Inf left out.
func topList(lp []float64, n int) []int32 {
	ids := make([]int32, 0, len(lp))
	for i, v := range lp {
		if !math.IsInf(v, -1) {
			ids = append(ids, int32(i))
		}
	}
	slices.SortStableFunc(ids, func(a, b int32) int {
		switch {
		case lp[a] > lp[b]:
			return -1
		case lp[a] < lp[b]:
			return 1
		}
		return 0
	})
	return ids[:min(n, len(ids))]
}

// TestAgainstReference runs random requests for several steps and checks
// every result against the literal reference: the greedy choice, that a
// sampled token has probability > 0, the logprobs (either mode), top lists
// and ranks.
func TestAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	checked, skipped := 0, 0
	defer func() {
		t.Logf("%d logprob steps checked, %d skipped as ambiguous", checked, skipped)
		if skipped*20 > checked {
			t.Errorf("too many ambiguous steps: %d of %d", skipped, checked)
		}
	}()
	for c := range 400 {
		p, vocab, eos, prompt := randomCase(r)
		s, err := New(p, vocab, eos, prompt)
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		for step := range 6 {
			row := randomRow(r, vocab)
			ref := reference(p, vocab, eos, prompt, s.Output(), row)
			res, err := s.Sample(slices.Clone(row))
			if errors.Is(err, ErrAllMasked) {
				if slices.Max(ref.processed) != float32(math.Inf(-1)) {
					t.Fatalf("case %d step %d: ErrAllMasked but the reference has %v", c, step, ref.processed)
				}
				break
			}
			if err != nil {
				t.Fatalf("case %d step %d: %v", c, step, err)
			}
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("case %d step %d (%+v, vocab %d): "+format, append([]any{c, step, p, vocab}, args...)...)
			}
			if p.Greedy() {
				if res.ID != ref.greedy {
					fail("greedy %d, reference %d", res.ID, ref.greedy)
				}
			} else if !(ref.probs[res.ID] > 0) {
				fail("sampled %d with reference probability 0", res.ID)
			}
			if p.Logprobs == nil {
				continue
			}
			if ref.ambiguous {
				skipped++
				continue
			}
			checked++
			lp := ref.rawLP
			if p.LogprobsMode == ProcessedLogprobs {
				lp = ref.procLP
			}
			if !near(res.Logprob, lp[res.ID], 1e-5) {
				fail("logprob of %d = %v, reference %v", res.ID, res.Logprob, lp[res.ID])
			}
			rank := 0
			for _, v := range lp {
				if v >= lp[res.ID]-1e-9*math.Abs(lp[res.ID]) {
					rank++
				}
			}
			if res.Rank != rank {
				fail("rank of %d = %d, reference %d", res.ID, res.Rank, rank)
			}
			want := topList(lp, *p.Logprobs)
			if len(res.Top) != len(want) {
				fail("top %v, reference ids %v", res.Top, want)
			}
			for i, e := range res.Top {
				if e.ID != want[i] && lp[e.ID] != lp[want[i]] {
					fail("top %v, reference ids %v", res.Top, want)
				}
				if !near(e.Logprob, lp[e.ID], 1e-5) {
					fail("top logprob of %d = %v, reference %v", e.ID, e.Logprob, lp[e.ID])
				}
			}
		}
	}
}

// TestDenseMatchesSparse: the in-place path (taken with a custom processor)
// and the sparse path pick the same tokens from the same seed.
func TestDenseMatchesSparse(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for c := range 300 {
		p, vocab, eos, prompt := randomCase(r)
		a := newSampler(t, p, vocab, eos, prompt, nil)
		p.Processors = []LogitsProcessor{noop{}}
		b := newSampler(t, p, vocab, eos, prompt, nil)
		for step := range 6 {
			row := randomRow(r, vocab)
			ra, ea := a.Sample(slices.Clone(row))
			rb, eb := b.Sample(slices.Clone(row))
			if (ea == nil) != (eb == nil) {
				t.Fatalf("case %d step %d: errors %v and %v", c, step, ea, eb)
			}
			if ea != nil {
				break
			}
			if ra.ID != rb.ID || ra.Rank != rb.Rank || !near(ra.Logprob, float64(rb.Logprob), 1e-6) || len(ra.Top) != len(rb.Top) {
				t.Fatalf("case %d step %d (%+v): sparse %+v, dense %+v", c, step, p, ra, rb)
			}
		}
	}
}

// TestCandidatesMatchFullRow: whenever the sampler accepts a candidate set
// (the row's top CandidateCount, as the GPU would send), the result equals
// the full row's bit for bit; when it refuses, nothing changed and the full
// row gives the answer.
func TestCandidatesMatchFullRow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	used, refused := 0, 0
	for c := range 600 {
		p, vocab, eos, prompt := randomCase(r)
		if c%2 == 0 { // bias the mix towards configurations candidates serve
			p.AllowedTokenIDs, p.Logprobs = nil, nil
			if p.TopK <= 0 && p.Temperature > 0 {
				p.TopK = 1 + r.IntN(30)
			}
			if p.RepetitionPenalty < 1 {
				p.RepetitionPenalty = 1.2
			}
			p.FrequencyPenalty, p.PresencePenalty = math.Abs(p.FrequencyPenalty), math.Abs(p.PresencePenalty)
			for id, b := range p.LogitBias {
				p.LogitBias[id] = -math.Abs(b)
			}
		}
		full := newSampler(t, p, vocab, eos, prompt, nil)
		cand := newSampler(t, p, vocab, eos, prompt, nil)
		for step := range 8 {
			row := randomRow(r, vocab)
			want, werr := full.Sample(slices.Clone(row))
			k := cand.CandidateCount()
			if cand.NeedsFullRow() != (k == 0) {
				t.Fatal("NeedsFullRow disagrees with CandidateCount")
			}
			var got Result
			var gerr error
			if k == 0 {
				if _, err := cand.SampleCandidates([]int32{0}, f32s(0)); !errors.Is(err, ErrNeedsFullRow) {
					t.Fatalf("CandidateCount 0 but SampleCandidates gave %v", err)
				}
				got, gerr = cand.Sample(slices.Clone(row))
			} else {
				ids, vals := topCandidates(row, k)
				before := slices.Clone(cand.Output())
				rngBefore := cand.rng
				got, gerr = cand.SampleCandidates(ids, vals)
				if errors.Is(gerr, ErrNeedsFullRow) {
					refused++
					if !slices.Equal(before, cand.Output()) || cand.rng != rngBefore {
						t.Fatal("a refused candidate set changed the sampler's state")
					}
					got, gerr = cand.Sample(slices.Clone(row))
				} else {
					used++
				}
			}
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("case %d step %d: errors %v, %v", c, step, werr, gerr)
			}
			if werr != nil {
				break
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("case %d step %d (%+v, %d candidates): got %+v, want %+v", c, step, p, k, got, want)
			}
		}
	}
	t.Logf("candidate sets used %d times, refused %d", used, refused)
	if used < 500 || refused == 0 {
		t.Errorf("weak coverage: candidates used %d times, refused %d", used, refused)
	}
}

// topCandidates is what the GPU TopK op returns: the k best, ties to the
// lowest id, best first.
func topCandidates(row []float32, k int) ([]int32, []float32) {
	c := make([]cand, len(row))
	for i, v := range row {
		c[i] = cand{v, int32(i)}
	}
	slices.SortFunc(c, cmpCand)
	ids := make([]int32, k)
	vals := make([]float32, k)
	for i := range k {
		ids[i], vals[i] = c[i].id, c[i].v
	}
	return ids, vals
}

func TestCandidateErrors(t *testing.T) {
	s := newSampler(t, params(func(p *Params) { p.TopK = 2 }), 10, nil, nil, nil)
	if k := s.CandidateCount(); k != 2 {
		t.Fatalf("CandidateCount %d, want 2", k)
	}
	var re *RowError
	if _, err := s.SampleCandidates([]int32{1}, f32s(1)); !errors.As(err, &re) {
		t.Errorf("too few candidates: %v", err)
	}
	if _, err := s.SampleCandidates([]int32{1, 2}, f32s(1)); !errors.As(err, &re) {
		t.Errorf("length mismatch: %v", err)
	}
	var pe *ParamError
	if _, err := s.SampleCandidates([]int32{1, 10}, f32s(1, 2)); !errors.As(err, &pe) {
		t.Errorf("id out of range: %v", err)
	}
	if _, err := s.SampleCandidates([]int32{3, 3}, f32s(1, 2)); !errors.As(err, &pe) {
		t.Errorf("duplicate ids: %v", err)
	}
	var le *LogitError
	if _, err := s.SampleCandidates([]int32{1, 2}, f32s(1, float32(math.NaN()))); !errors.As(err, &le) || le.Index != 1 {
		t.Errorf("NaN candidate: %v", err)
	}
	if len(s.Output()) != 0 {
		t.Errorf("failed calls changed the history: %v", s.Output())
	}
	// Counts: greedy needs 1; min_tokens adds the stop ids while active;
	// penalties add a margin; raising processors need the full row.
	for _, tc := range []struct {
		f    func(*Params)
		out  []int32
		want int
	}{
		{func(p *Params) { p.Temperature = 0 }, nil, 1},
		{func(p *Params) { p.Temperature = 0; p.MinTokens = 2; p.StopTokenIDs = []int32{4} }, nil, 3},
		{func(p *Params) { p.Temperature = 0; p.MinTokens = 2; p.StopTokenIDs = []int32{4} }, []int32{1, 1}, 1},
		{func(p *Params) { p.TopK = 3; p.RepetitionPenalty = 1.1 }, nil, 3 + candidateMargin},
		{func(p *Params) { p.TopK = 3; p.BadWordIDs = [][]int32{{1}, {2, 3}}; p.BadWords = []string{"x"} }, nil, 5},
		{func(p *Params) { p.TopK = 3; p.RepetitionPenalty = 0.9 }, nil, 0},
		{func(p *Params) { p.TopK = 3; p.LogitBias = map[int32]float64{1: 1} }, nil, 0},
		{func(p *Params) { p.TopK = 3; p.Logprobs = intp(2) }, nil, 0},
		{func(p *Params) { p.TopK = 3; p.Logprobs = intp(2); p.LogprobsMode = ProcessedLogprobs }, nil, 3},
		{func(p *Params) { p.Temperature = 0; p.Logprobs = intp(2); p.LogprobsMode = ProcessedLogprobs }, nil, 0},
		{func(p *Params) { p.TopP = 0.9 }, nil, 0},
		{func(p *Params) { p.TopK = 3; p.AllowedTokenIDs = []int32{1} }, nil, 0},
		{func(p *Params) { p.TopK = 3; p.Processors = []LogitsProcessor{noop{}} }, nil, 0},
	} {
		s := newSampler(t, params(tc.f), 100, []int32{9}, nil, tc.out)
		if k := s.CandidateCount(); k != tc.want {
			t.Errorf("%+v after %v: CandidateCount %d, want %d", s.p, tc.out, k, tc.want)
		}
	}
}
