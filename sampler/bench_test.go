package sampler

import (
	"math"
	"testing"
	"time"
)

// The benchmarks run on a Qwen-sized row (V = 151,936) of logits shaped
// like a model's: most around -3 with a spread of 2.5, a few far above.
// BenchmarkArgmax is the yardstick: a plain loop over the same row. Each
// Sample benchmark times it alongside, per iteration, and reports the
// fastest Sample (min-ns, without the row copy that ns/op includes), the
// fastest argmax (argmax-min-ns) and their ratio (x-argmax), and the ratio
// of the total times (x-argmax-mean, the one to read in the browser, whose
// clock ticks every 100µs).
const benchV = 151936

func benchRow() []float32 {
	g := rng{state: 2024}
	row := make([]float32, benchV)
	for i := range row {
		// Irwin–Hall: the sum of 4 uniforms is close to normal.
		u := g.float64() + g.float64() + g.float64() + g.float64() - 2
		row[i] = float32(u*4.3 - 3)
	}
	for i, v := range []float32{18, 16.5, 15, 14, 13.5, 12} {
		row[(i*48271+1009)%benchV] = v
	}
	return row
}

var sinkID int32

func BenchmarkArgmax(b *testing.B) {
	row := benchRow()
	b.ReportAllocs()
	for b.Loop() {
		sinkID = plainArgmax(row)
	}
}

// allOn turns on every processor and truncation; mode picks the logprobs.
func allOn(p *Params, mode string) {
	p.Temperature = 0.8
	p.TopK = 50
	p.TopP = 0.9
	p.MinP = 0.05
	p.RepetitionPenalty = 1.1
	p.FrequencyPenalty = 0.3
	p.PresencePenalty = 0.2
	p.LogitBias = map[int32]float64{100: 2, 200: -100, 300: 5}
	p.BadWords = []string{"x"}
	p.BadWordIDs = [][]int32{{11}, {12, 13}, {14, 15, 16}}
	p.MinTokens = 1 << 30 // always active: bans the stop ids below
	p.StopTokenIDs = []int32{151643, 151645}
	p.Logprobs = intp(5)
	p.LogprobsMode = mode
}

func benchSample(b *testing.B, f func(*Params)) {
	p := params(f)
	p.MaxTokens = 0
	prompt := make([]int32, 1000) // 1,000 prompt tokens for the repetition penalty
	g := rng{state: 5}
	for i := range prompt {
		prompt[i] = int32(g.uint64() % benchV)
	}
	s, err := New(p, benchV, []int32{151643}, prompt)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 200 { // 200 generated tokens of history
		if err := s.Accept(int32(g.uint64() % benchV)); err != nil {
			b.Fatal(err)
		}
		_ = i
	}
	row := benchRow()
	buf := make([]float32, benchV)
	b.ReportAllocs()
	// Each iteration also times a plain argmax over the same row. The
	// fastest of each over all iterations are the costs without preemption
	// (the machine may be shared): their ratio is x-argmax.
	// In the browser the clock ticks every 100µs, so the interleaved sums
	// give the ratio there (x-argmax-mean).
	minArg, minSample := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	var sumArg, sumSample time.Duration
	for b.Loop() {
		t0 := time.Now()
		sinkID = plainArgmax(row)
		t1 := time.Now()
		copy(buf, row) // Sample uses the row as scratch
		t2 := time.Now()
		r, err := s.Sample(buf)
		t3 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		sinkID = r.ID
		s.h.undoLast() // keep the history (and the work) constant
		minArg = min(minArg, t1.Sub(t0))
		minSample = min(minSample, t3.Sub(t2))
		sumArg += t1.Sub(t0)
		sumSample += t3.Sub(t2)
	}
	b.ReportMetric(float64(minSample.Nanoseconds()), "min-ns")
	b.ReportMetric(float64(minArg.Nanoseconds()), "argmax-min-ns")
	b.ReportMetric(float64(minSample)/float64(minArg), "x-argmax")
	b.ReportMetric(float64(sumSample)/float64(sumArg), "x-argmax-mean")
}

func plainArgmax(row []float32) int32 {
	best, at := row[0], 0
	for i, v := range row {
		if v > best {
			best, at = v, i
		}
	}
	return int32(at)
}

// BenchmarkCopy is the row copy every Sample benchmark below includes.
func BenchmarkCopy(b *testing.B) {
	row, buf := benchRow(), make([]float32, benchV)
	for b.Loop() {
		copy(buf, row)
	}
}

func BenchmarkGreedy(b *testing.B) { benchSample(b, func(p *Params) { p.Temperature = 0 }) }
func BenchmarkTopK(b *testing.B) {
	benchSample(b, func(p *Params) { p.TopK = 50; p.Temperature = 0.8 })
}
func BenchmarkTemperature(b *testing.B) {
	benchSample(b, func(p *Params) { p.Temperature = 0.8 })
}
func BenchmarkTopP(b *testing.B) {
	benchSample(b, func(p *Params) { p.TopP = 0.9; p.Temperature = 0.8 })
}

// BenchmarkAllOnProcessed: every option on, processed logprobs.
func BenchmarkAllOnProcessed(b *testing.B) {
	benchSample(b, func(p *Params) { allOn(p, ProcessedLogprobs) })
}

// BenchmarkAllOnRaw: every option on, raw logprobs (a full log-softmax of
// the model's row: one exponential per vocabulary entry).
func BenchmarkAllOnRaw(b *testing.B) { benchSample(b, func(p *Params) { allOn(p, RawLogprobs) }) }

// BenchmarkAllOnAllowed: every option on including allowed_token_ids
// (1,000 ids) and raw logprobs.
func BenchmarkAllOnAllowed(b *testing.B) {
	benchSample(b, func(p *Params) {
		allOn(p, RawLogprobs)
		for i := range 1000 {
			p.AllowedTokenIDs = append(p.AllowedTokenIDs, int32(i*151))
		}
	})
}

// BenchmarkAllOnCustom: every option on plus a custom processor (the
// in-place path).
func BenchmarkAllOnCustom(b *testing.B) {
	benchSample(b, func(p *Params) {
		allOn(p, ProcessedLogprobs)
		p.Processors = []LogitsProcessor{noop{}}
	})
}

// BenchmarkCandidates: top_k 50 with penalties from a GPU candidate set.
func BenchmarkCandidates(b *testing.B) {
	p := params(func(p *Params) {
		p.TopK, p.TopP, p.MinP, p.Temperature = 50, 0.9, 0.05, 0.8
		p.RepetitionPenalty = 1.1
	})
	s, err := New(p, benchV, nil, []int32{1, 2, 3})
	if err != nil {
		b.Fatal(err)
	}
	ids, vals := topCandidates(benchRow(), s.CandidateCount())
	b.ReportAllocs()
	for b.Loop() {
		r, err := s.SampleCandidates(ids, vals)
		if err != nil {
			b.Fatal(err)
		}
		sinkID = r.ID
		s.h.undoLast()
	}
}

// undoLast forgets the last generated token.
func (h *history) undoLast() {
	id := h.out[len(h.out)-1]
	h.out = h.out[:len(h.out)-1]
	h.count[id]--
	if h.count[id] == 0 {
		h.outIDs = h.outIDs[:len(h.outIDs)-1]
		if h.trackRep && !h.inPrompt[id] {
			h.seen = h.seen[:len(h.seen)-1]
		}
	}
}
