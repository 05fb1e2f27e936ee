package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchText builds a deterministic mixed-language text of at least 1 MiB
// from the golden strings (English, code, CJK, Arabic, Hindi, Thai, emoji,
// whitespace runs...), drawn by a fixed LCG. With TOKENIZER_BENCH_TEXT set
// to a path, it is also written there, so that other implementations can be
// measured on the same text.
func benchText(tb testing.TB) string {
	var lines []string
	seen := map[string]bool{}
	for _, name := range goldenNames {
		for _, g := range readJSONL[goldenLine](tb, filepath.Join(testdata, "tokenizer", name+".jsonl.gz")) {
			if !seen[g.Text] {
				seen[g.Text] = true
				lines = append(lines, g.Text)
			}
		}
	}
	var b strings.Builder
	x := uint64(0x9E3779B97F4A7C15)
	for b.Len() < 1<<20 {
		x = x*6364136223846793005 + 1442695040888963407
		b.WriteString(lines[(x>>33)%uint64(len(lines))])
		if x>>60 < 12 {
			b.WriteByte(' ')
		} else {
			b.WriteByte('\n')
		}
	}
	text := b.String()
	if p := os.Getenv("TOKENIZER_BENCH_TEXT"); p != "" {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return text
}

// BenchmarkEncode reports encode throughput in MB/s on benchText, with the
// per-word cache as used in production ("cached") and with the cache
// cleared before every pass ("cold"). MB/cpu-s divides by the process's CPU
// time instead of wall time (it includes the GC's work on other threads;
// run with -cpu 1 on a shared machine). testdata/jsbench/bench.mjs measures
// @huggingface/transformers on the same text.
func BenchmarkEncode(b *testing.B) {
	text := benchText(b)
	for _, name := range []string{"llama3", "qwen3"} {
		tk := hfTok(b, filepath.Join("tokenizer", name))
		for _, mode := range []string{"cached", "cold"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				n := 0
				cpu0 := cpuTime()
				for b.Loop() {
					if mode == "cold" {
						tk.cache.reset()
					}
					n = len(tk.mustEncode(text, false))
				}
				b.ReportMetric(float64(n), "tokens")
				if cpu := cpuTime() - cpu0; cpu > 0 {
					b.ReportMetric(float64(len(text))*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
				}
			})
		}
	}
}

// BenchmarkEncodeLongWord checks that merging scales on one long word.
func BenchmarkEncodeLongWord(b *testing.B) {
	tk := hfTok(b, "tokenizer/qwen3")
	word := strings.Repeat("abcdefghij", 10000)
	b.SetBytes(int64(len(word)))
	cpu0 := cpuTime()
	for b.Loop() {
		tk.mustEncode(word, false)
	}
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(len(word))*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

// BenchmarkDecodeStream measures the streaming detokenizer per token.
func BenchmarkDecodeStream(b *testing.B) {
	tk := hfTok(b, "tokenizer/qwen3")
	ids := tk.mustEncode(benchText(b), false)
	b.ResetTimer()
	for b.Loop() {
		d := tk.NewDecoder(DecodeOptions{})
		for _, id := range ids {
			d.Add(id)
		}
		d.Flush()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
}

// BenchmarkLoad measures building the Qwen3 tokenizer (151k tokens, 151k
// merges) from tokenizer.json and from a GGUF holding the same vocabulary.
func BenchmarkLoad(b *testing.B) {
	tj := readTestFile(b, "tokenizer", "qwen3", "tokenizer.json")
	cfg := readTestFile(b, "tokenizer", "qwen3", "tokenizer_config.json")
	b.Run("tokenizer.json", func(b *testing.B) {
		b.SetBytes(int64(len(tj)))
		for b.Loop() {
			if _, err := FromHFJSON(tj, cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
