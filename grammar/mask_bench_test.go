package grammar_test

import (
	"math/bits"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"wasmllm/grammar"
	"wasmllm/internal/testkit"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
)

// benchGBNF is a hand-written GBNF grammar for the mask benchmarks: a
// list of arithmetic expressions with nested parentheses.
const benchGBNF = `root ::= expr (";" ws expr)*
expr ::= term (ws [-+] ws term)*
term ::= factor (ws [*/] ws factor)*
factor ::= "-"? ([0-9]+ ("." [0-9]+)? | "(" ws expr ws ")" | name)
name ::= [a-z_] [a-z0-9_]{0,15}
ws ::= " "?`

// benchSchema is a nested JSON Schema for the mask benchmarks.
const benchSchema = `{"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 40},
  "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
  "address": {"type": "object", "properties": {
     "street": {"type": "string"}, "city": {"type": "string"},
     "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
     "required": ["city"], "additionalProperties": false},
  "kind": {"enum": ["a", "b", 3, null]}},
 "required": ["name", "age", "address"], "additionalProperties": false}`

func loadVocab(tb testing.TB, dir string) (*grammar.Vocab, int) {
	tb.Helper()
	_, err := os.Stat(dir + "/tokenizer.json")
	testkit.Need(tb, err == nil, "%s: run make testdata", dir)
	tok, err := tokenizer.FromHFDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return grammar.NewVocab(tok.VocabSize(), tok.Piece, tok.EOS(), tok.StripsLeadingSpace()), tok.VocabSize()
}

// BenchmarkMask times a grammar's compilation and its token masks along
// seeded random walks (each step takes a random allowed token), on the
// Qwen3 (151,936 tokens) and Llama-3 (128,256) vocabularies, for a nested
// JSON Schema and a GBNF grammar. Reported per step: the median and p99
// mask time, and each as a ratio to the median time the sampler takes
// over an unconstrained row of the same vocabulary (temperature 1, the
// full-row path). Run natively and in Chromium with make bench-grammar.
func BenchmarkMask(b *testing.B) {
	gbnfSchema, err := grammar.JSONSchemaGBNF([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	sources := []struct{ name, src string }{{"schema", gbnfSchema}, {"gbnf", benchGBNF}}
	for _, voc := range []struct{ name, dir string }{{"qwen3", "../testdata/tokenizer/qwen3"}, {"llama3", "../testdata/tokenizer/llama3"}} {
		v, n := loadVocab(b, voc.dir)
		sample := sampleTime(b, n)
		for _, src := range sources {
			b.Run(voc.name+"/"+src.name, func(b *testing.B) {
				t0 := time.Now()
				g, err := grammar.Compile(src.src)
				if err != nil {
					b.Fatal(err)
				}
				compile := time.Since(t0)
				rng := rand.New(rand.NewPCG(7, 7))
				words := make([]uint32, v.MaskWords())
				var times []time.Duration
				m := g.NewMatcher()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					cnt := m.Mask(v, words)
					d := time.Since(t0)
					if d < time.Millisecond {
						// Near the browser clock's resolution (100 us
						// without cross-origin isolation): the state's mask
						// is cached now, so time repeats of the same call
						// until they take a millisecond, and keep the larger
						// of the two readings.
						reps := 0
						t0 = time.Now()
						for time.Since(t0) < time.Millisecond {
							for range 16 {
								m.Mask(v, words)
							}
							reps += 16
						}
						if reps > 0 { // the clock may jump past the millisecond at once
							d = max(d, time.Since(t0)/time.Duration(reps))
						}
					}
					times = append(times, d)
					id := pick(rng, words, cnt)
					if cnt == 0 || m.AcceptToken(v, id) != nil || m.Done() || len(times)%200 == 0 {
						m = g.NewMatcher() // a new sample
					}
				}
				b.StopTimer()
				slices.Sort(times)
				med, p99 := times[len(times)/2], times[len(times)*99/100]
				b.ReportMetric(float64(compile.Microseconds())/1000, "compile-ms")
				b.ReportMetric(float64(med.Nanoseconds())/1000, "median-us")
				b.ReportMetric(float64(p99.Nanoseconds())/1000, "p99-us")
				b.ReportMetric(float64(med)/float64(sample), "median/sample")
				b.ReportMetric(float64(p99)/float64(sample), "p99/sample")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// pick returns the cnt-th allowed token chosen uniformly.
func pick(rng *rand.Rand, words []uint32, cnt int) int32 {
	if cnt == 0 {
		return -1
	}
	k := rng.IntN(cnt)
	for i, w := range words {
		c := bits.OnesCount32(w)
		if k >= c {
			k -= c
			continue
		}
		for ; ; w &= w - 1 {
			if k == 0 {
				return int32(i*32 + bits.TrailingZeros32(w))
			}
			k--
		}
	}
	return -1
}

// sampleTime is the sampler's median time (of batches of ten) over an unconstrained row of n
// logits (temperature 1, no top-k: the full-row path).
func sampleTime(b *testing.B, n int) time.Duration {
	rng := rand.New(rand.NewPCG(3, 3))
	row := make([]float32, n)
	for i := range row {
		row[i] = float32(rng.NormFloat64() * 3)
	}
	p := sampler.DefaultParams()
	seed := int64(1)
	p.Seed, p.MaxTokens = &seed, 1<<20
	s, err := sampler.New(p, n, nil, []int32{1})
	if err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	for range 9 {
		t0 := time.Now()
		for range 10 {
			if _, err := s.Sample(row); err != nil {
				b.Fatal(err)
			}
		}
		times = append(times, time.Since(t0)/10)
	}
	slices.Sort(times)
	return times[len(times)/2]
}
