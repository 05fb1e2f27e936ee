package model_test

import (
	"fmt"
	"math"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
)

// kvGoldenTol is the tolerance of every vendored exact golden with an F16
// or a q8 KV cache on the CPU engine, on the golden's row error (the
// largest |Δlogit| over the row's largest |logit|), with the greedy ids
// exact (q8: teacher-forced where a near-tie flips, checkGoldenKV).
// Measured worst over the 35 files (TestGoldenCPUKVTypes logs each): f16
// 1.9e-3 (stories260K), q8 0.128 (tiny-qwen2-q8_0's greedy rows; 0.089
// for stories260K, the trained model, whose perplexity moves 0.2%:
// engine.TestPerplexityKV).
var kvGoldenTol = map[loader.DType]float64{loader.F16: 2.5e-3, model.KVQ8: 0.15}

// kvQ8FileTol overrides kvGoldenTol's q8 bound for a file: tiny-gemma4moe's
// rows move by 0.64 with a q8 cache. Measured by cache group: q8 in its
// sliding layers' group alone (2 KV heads of 32, window 5) 0.64, in its
// global layers' alone 0.0072. The CPU's q8 attention equals the reference
// on the quantised rows (backendtest TypedKV), so this is how far this
// random model's sliding layers amplify the quantisation; why so much more
// than tiny-gemma4's (within 0.15) is not yet understood (issue 41).
var kvQ8FileTol = map[string]float64{"tiny-gemma4moe-q4_0.golden": 0.7}

// kvGoldenDirs are the vendored golden folders the KV types run over.
var kvGoldenDirs = []string{"../testdata/golden", "../testdata/k/golden", "../testdata/qwen2/golden", "../testdata/qwen35/golden", "../testdata/phi3/golden", "../testdata/gemma/golden"}

// TestGoldenCPUKVTypes runs every vendored exact golden (the prompt in one
// batch, then greedy decoding through the cache) with an F16 and a q8 KV
// cache on the CPU engine: each row within kvGoldenTol of llama.cpp's
// (which ran with an f32 cache), the greedy ids exact.
func TestGoldenCPUKVTypes(t *testing.T) {
	worst := map[loader.DType]float64{}
	n := 0
	for _, dir := range kvGoldenDirs {
		for _, g := range golden.Files(t, dir, "exact", true, false) {
			n++
			for _, kv := range []loader.DType{loader.F16, model.KVQ8} {
				t.Run(fmt.Sprintf("%s/%s", g.Name, model.KVDTypeName(kv)), func(t *testing.T) {
					m, err := model.Build(cpu.New(0), loadWeights(t, g.ModelPath()))
					if err != nil {
						t.Fatal(err)
					}
					tol := max(kvGoldenTol[kv], g.Tolerance)
					if ft, ok := kvQ8FileTol[g.Name]; ok && kv == model.KVQ8 {
						tol = ft
					}
					worst[kv] = math.Max(worst[kv], checkGoldenKV(t, m, g, tol, kv))
				})
			}
		}
	}
	if n < 30 {
		t.Errorf("only %d golden files", n)
	}
	t.Logf("worst row error over %d goldens: f16 %.3g, q8 %.3g", n, worst[loader.F16], worst[model.KVQ8])
}
