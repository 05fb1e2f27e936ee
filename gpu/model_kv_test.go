//go:build js

package gpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/engine"
	"wasmllm/gpu/webgpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
)

// cacheBytes is the bytes of a cache's K and V buffers.
func cacheBytes(c *kvCache) uint64 {
	var n uint64
	for _, list := range [][]*webgpu.Buffer{c.k, c.v} {
		for _, buf := range list {
			n += buf.Size()
		}
	}
	return n
}

// TestModelEngineKVF16 builds engines with engine.Options{KVDType: F16}:
// the engine reports F16, the cache takes half the bytes of an f32 one,
// the prompt's logits (one batch) and the greedy steps' logits (decode,
// one token at a time, in the engine's cache) agree with the golden file
// within ten times its tolerance, and the engine's greedy generation gives
// the golden ids.
func TestModelEngineKVF16(t *testing.T) {
	b := modelBackend(t)
	for _, path := range []string{
		filepath.Join(goldenDir, "tiny-llama3-q4_0.golden"),
		filepath.Join(goldenDir, "tiny-qwen3moe-q4_0.golden"),
		filepath.Join(goldenDirs[1], "tiny-qwen2-q4_0.golden"), // q/k/v biases before the f16 cache
	} {
		name := strings.TrimSuffix(filepath.Base(path), ".golden")
		t.Run(name, func(t *testing.T) {
			if f := os.Getenv("WASMLLM_GOLDEN"); !strings.Contains(name, f) {
				t.Skip("WASMLLM_GOLDEN")
			}
			g := golden.Read(t, path)
			const capacity = 64
			ge, err := engine.Load(g.ModelPath(), b,
				engine.LoadOptions{Options: engine.Options{Context: capacity, KVDType: loader.F16}})
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, ge.Model)
			defer b.FreeKVCache(ge.Cache())
			if got := ge.KVDType(); got != loader.F16 {
				t.Fatalf("engine reports a %v cache, want F16", got)
			}
			kc, ok := ge.Cache().(*kvCache)
			if !ok || kc.DType() != loader.F16 {
				t.Fatalf("cache %T", ge.Cache())
			}
			f32, err := ge.Model.NewCache(capacity)
			if err != nil {
				t.Fatal(err)
			}
			c := ge.Model.Config
			n16, n32 := cacheBytes(kc), cacheBytes(f32.(*kvCache))
			b.FreeKVCache(f32)
			if want := uint64(2 * c.Layers * capacity * c.KVHeads * c.HeadDim * 2); n16 != want || 2*n16 != n32 {
				t.Errorf("f16 cache %d bytes (want %d), f32 cache %d bytes", n16, want, n32)
			}
			t.Logf("KV cache of %d positions: f16 %d bytes, f32 %d bytes", capacity, n16, n32)

			tol := kvTolerance(g.Tolerance, kc)
			vsGolden := &rowChecker{t: t, what: "gpu f16 kv vs golden", tol: tol}
			defer vsGolden.log()
			run := &goldenRun{t: t, m: ge.Model, cache: kc, what: "gpu f16 kv"}
			T := len(g.Tokens)
			rows := run.forward(g.Tokens, 0)
			for i, want := range g.Logits {
				vsGolden.check(fmt.Sprintf("prompt row %d", g.Position(i)), rows[g.Position(i)], want)
			}
			row := rows[T-1]
			for step := range g.Greedy {
				if id := golden.Argmax(row); id != g.Greedy[step] {
					t.Fatalf("greedy step %d: id %d, golden %d", step, id, g.Greedy[step])
				}
				if step == len(g.Greedy)-1 || step >= len(g.GreedyLogits) {
					break
				}
				row = run.forward([]int32{g.Greedy[step]}, T+step)[0]
				vsGolden.check(fmt.Sprintf("greedy step %d", step), row, g.GreedyLogits[step])
			}

			p := sampler.DefaultParams()
			p.Temperature, p.MaxTokens, p.IgnoreEOS = 0, len(g.Greedy), true
			res, err := ge.Generate(context.Background(), &engine.Request{Tokens: g.Tokens, Params: p}, func(engine.Token) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Tokens, g.Greedy) {
				t.Errorf("engine greedy ids %v, golden %v", res.Tokens, g.Greedy)
			}
		})
	}
}

// TestModelEngineKVQ8 builds engines with engine.Options{KVDType: KVQ8}
// on models whose heads are a multiple of 16 (tiny-llama3's 16,
// tiny-qwen3's and tiny-qwen2's 32): the engine reports q8, the cache
// takes model.KVRowBytes's bytes (1.125 or 1.25 a value against f32's 4),
// the prompt's logits (one batch: the prefill kernel) and the greedy
// steps' (the decode kernel), teacher-forced, agree with the golden
// within 0.05 (measured worst 0.017, tiny-qwen3-q4_0 in Chromium; the CPU
// engine's q8 goldens, all 35 files, reach 0.128: model's kvGoldenTol),
// and the engine's greedy generation gives the golden ids.
func TestModelEngineKVQ8(t *testing.T) {
	b := modelBackend(t)
	for _, path := range []string{
		filepath.Join(goldenDir, "tiny-llama3-q4_0.golden"),
		filepath.Join(goldenDir, "tiny-qwen3-q4_0.golden"),
		filepath.Join(goldenDirs[1], "tiny-qwen2-q4_0.golden"), // q/k/v biases before the q8 cache
	} {
		name := strings.TrimSuffix(filepath.Base(path), ".golden")
		t.Run(name, func(t *testing.T) {
			if f := os.Getenv("WASMLLM_GOLDEN"); !strings.Contains(name, f) {
				t.Skip("WASMLLM_GOLDEN")
			}
			g := golden.Read(t, path)
			const capacity = 64
			ge, err := engine.Load(g.ModelPath(), b,
				engine.LoadOptions{Options: engine.Options{Context: capacity, KVDType: model.KVQ8}})
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, ge.Model)
			defer b.FreeKVCache(ge.Cache())
			kc, ok := ge.Cache().(*kvCache)
			if !ok || kc.DType() != model.KVQ8 || ge.KVDType() != model.KVQ8 {
				t.Fatalf("cache %T of %v", ge.Cache(), ge.KVDType())
			}
			c := ge.Model.Config
			if n, want := cacheBytes(kc), uint64(2*c.Layers*capacity)*uint64(model.KVRowBytes(model.KVQ8, c.KVHeads, c.HeadDim)); n != want {
				t.Errorf("q8 cache %d bytes, want %d", n, want)
			}
			vsGolden := &rowChecker{t: t, what: "gpu q8 kv vs golden", tol: 0.05}
			defer vsGolden.log()
			run := &goldenRun{t: t, m: ge.Model, cache: kc, what: "gpu q8 kv"}
			T := len(g.Tokens)
			rows := run.forward(g.Tokens, 0)
			for i, want := range g.Logits {
				vsGolden.check(fmt.Sprintf("prompt row %d", g.Position(i)), rows[g.Position(i)], want)
			}
			for step := range g.Greedy {
				if step == len(g.Greedy)-1 || step >= len(g.GreedyLogits) {
					break
				}
				row := run.forward([]int32{g.Greedy[step]}, T+step)[0]
				vsGolden.check(fmt.Sprintf("greedy step %d", step), row, g.GreedyLogits[step])
			}

			p := sampler.DefaultParams()
			p.Temperature, p.MaxTokens, p.IgnoreEOS = 0, len(g.Greedy), true
			res, err := ge.Generate(context.Background(), &engine.Request{Tokens: g.Tokens, Params: p}, func(engine.Token) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Tokens, g.Greedy) {
				t.Errorf("engine greedy ids %v, golden %v", res.Tokens, g.Greedy)
			}
		})
	}
}
