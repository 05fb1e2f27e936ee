//go:build js

package gpu

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"wasmllm/engine"
	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
)

// Qwen3.5 on WebGPU: its Gated DeltaNet layers, gated attention with
// partial RoPE and the MoE's shared expert, against the exact goldens of
// testdata/qwen35.

const qwen35GoldenDir = "../testdata/qwen35/golden"

// qwen35Goldens is every exact Qwen3.5 golden: six short files and the
// long one (thinned: golden.File.Position gives a row's position).
func qwen35Goldens(t *testing.T) []*golden.File {
	t.Helper()
	files := golden.Files(t, qwen35GoldenDir, "exact", true, true)
	if len(files) != 7 {
		t.Fatalf("%d exact goldens in %s, want 7", len(files), qwen35GoldenDir)
	}
	return files
}

// TestQwen35Golden runs every exact Qwen3.5 golden on WebGPU with an f32
// and an f16 KV cache: the prompt in one batch (the long file's 256 tokens
// cross four 64-token chunks of the DeltaNet prefill) against every golden
// row, then greedy decoding one token at a time, ids identical and logits
// against greedy_logits (tolerance 5e-4, ten times that with f16 keys and
// values).
func TestQwen35Golden(t *testing.T) {
	b := modelBackend(t)
	for _, g := range qwen35Goldens(t) {
		t.Run(g.Name, func(t *testing.T) {
			m, err := model.Build(b, goldenWeights(t, g))
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, m)
			for _, kv := range []loader.DType{loader.F32, loader.F16} {
				t.Run(kv.String(), func(t *testing.T) { qwen35Golden(t, m, g, kv) })
			}
		})
	}
}

func qwen35Golden(t *testing.T, m *model.Model, g *golden.File, kv loader.DType) {
	T := len(g.Tokens)
	cache, err := m.NewCacheOf(kv, T+len(g.Greedy)+1)
	if err != nil {
		t.Fatal(err)
	}
	if model.KVDTypeOf(cache) != kv {
		t.Fatalf("cache of %v, want %v", model.KVDTypeOf(cache), kv)
	}
	r := &goldenRun{t: t, m: m, cache: cache, what: "gpu " + kv.String() + " kv"}
	defer r.free()
	check := &rowChecker{t: t, what: "gpu " + kv.String() + " kv vs golden", tol: kvTolerance(g.Tolerance, cache)}
	defer check.log()
	rows := r.forward(g.Tokens, 0)
	for i, want := range g.Logits {
		check.check(fmt.Sprintf("prompt row %d", g.Position(i)), rows[g.Position(i)], want)
	}
	row := rows[T-1]
	var ids []int32
	for step := range g.Greedy {
		id := golden.Argmax(row)
		if ids = append(ids, id); id != g.Greedy[step] {
			t.Fatalf("greedy step %d: id %d, golden %d (ids so far %v)", step, id, g.Greedy[step], ids)
		}
		if step == len(g.Greedy)-1 {
			break
		}
		row = r.forward([]int32{id}, T+step)[0]
		if step < len(g.GreedyLogits) {
			check.check(fmt.Sprintf("greedy step %d", step), row, g.GreedyLogits[step])
		}
	}
}

// TestQwen35ChunkedEqualsDecode: the long golden's 256 tokens on WebGPU
// token by token (deltanet_step, the recurrence) and in uneven batches
// (deltanet_chunk: chunks of 64 with remainders, batches starting inside
// a chunk's worth of tokens) agree at every position, and both match
// every golden row.
func TestQwen35ChunkedEqualsDecode(t *testing.T) {
	g := golden.Read(t, qwen35GoldenDir+"/tiny-qwen35-f32.long.golden")
	b := modelBackend(t)
	m, err := model.Build(b, goldenWeights(t, g))
	if err != nil {
		t.Fatal(err)
	}
	defer freeModel(b, m)
	run := func(what string, splits []int) [][]float32 {
		r := newGoldenRun(t, m, len(g.Tokens), what)
		defer r.free()
		var rows [][]float32
		pos := 0
		for _, n := range splits {
			rows = append(rows, r.forward(g.Tokens[pos:pos+n], pos)...)
			pos += n
		}
		if pos != len(g.Tokens) {
			t.Fatalf("splits %v cover %d of %d tokens", splits, pos, len(g.Tokens))
		}
		return rows
	}
	ones := make([]int, len(g.Tokens))
	for i := range ones {
		ones[i] = 1
	}
	decode := run("token by token", ones)
	batched := run("batches", []int{100, 1, 64, 91})
	vsGolden := &rowChecker{t: t, what: "decode and batches vs golden", tol: g.Tolerance}
	for i, want := range g.Logits {
		p := g.Position(i)
		vsGolden.check(fmt.Sprintf("decode row %d", p), decode[p], want)
		vsGolden.check(fmt.Sprintf("batched row %d", p), batched[p], want)
	}
	vsGolden.log()
	same := &rowChecker{t: t, what: "batches vs token by token", tol: g.Tolerance}
	for p := range decode {
		same.check(fmt.Sprintf("position %d", p), batched[p], decode[p])
	}
	same.log()
}

// TestQwen35DecodeDispatches counts a decode step's dispatches per layer
// (model.LayerMarker) by kind: a Gated DeltaNet layer with its dense FFN
// is within the 7 of a dense attention layer (in-proj, conv, the
// recurrence, out-proj, gate_up, down: 6); with the MoE and its shared
// expert (router, route, the routed gate_up and down, the shared gate_up
// and down: 6) a DeltaNet layer is 10 and an attention layer 11. Later
// decode steps replay the recorded program.
func TestQwen35DecodeDispatches(t *testing.T) {
	b := modelBackend(t)
	for _, c := range []struct {
		name             string
		deltaNet, attend int // at most, per layer
	}{{"tiny-qwen35-q8_0", 7, 7}, {"tiny-qwen35moe-q8_0", 10, 11}} {
		t.Run(c.name, func(t *testing.T) {
			g := golden.Read(t, qwen35GoldenDir+"/"+c.name+".golden")
			m, err := model.Build(b, goldenWeights(t, g))
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, m)
			cache, err := m.NewCache(len(g.Tokens) + 4)
			if err != nil {
				t.Fatal(err)
			}
			defer b.FreeKVCache(cache)
			logits := make([]float32, m.Config.Vocab)
			step := func(ids []int32) {
				out, err := m.Forward(cache, ids, cache.(*model.HybridCache).Len(), false)
				if err != nil {
					t.Fatal(err)
				}
				if err := b.ReadF32(out, logits); err != nil {
					t.Fatal(err)
				}
			}
			step(g.Tokens)
			step(g.Greedy[:1])
			per := b.LayerDispatches()
			// later steps replay the recorded program: one submit each, no
			// program recorded
			builds, stats := b.Stats().ProgramBuilds, b.Device().Stats()
			for _, id := range g.Greedy[1:4] {
				step([]int32{id})
			}
			if n, s := b.Stats().ProgramBuilds-builds, b.Device().Stats().Sub(stats); n != 0 || s.Submits != 3 {
				t.Errorf("3 decode steps: %d programs recorded, %d submits; want 0 and 3", n, s.Submits)
			}
			if len(per) != len(m.Layers) {
				t.Fatalf("LayerDispatches %v for %d layers", per, len(m.Layers))
			}
			for l, n := range per {
				kind, most := "attention", c.attend
				if _, ok := m.Layers[l].Mixer.(*model.DeltaNet); ok {
					kind, most = "Gated DeltaNet", c.deltaNet
				}
				t.Logf("layer %d (%s): %d dispatches at decode", l, kind, n)
				if n > most {
					t.Errorf("layer %d (%s): %d dispatches, want at most %d", l, kind, n, most)
				}
			}
		})
	}
}

// TestQwen35Engine generates greedily through the engine on WebGPU (f16
// KV cache), decode steps pipelined: the golden ids; the same request
// again reuses the saved state (cached prompt tokens) and gives the same
// ids; after a stop found one step late, the next turn reuses every
// cached token and continues as the golden does.
func TestQwen35Engine(t *testing.T) {
	b := modelBackend(t)
	g := golden.Read(t, qwen35GoldenDir+"/tiny-qwen35moe-f32.golden")
	e, err := engine.Load(g.ModelPath(), b, engine.LoadOptions{Options: engine.Options{Context: 64, KVDType: loader.F16}})
	if err != nil {
		t.Fatal(err)
	}
	defer freeModel(b, e.Model)
	defer b.FreeKVCache(e.Cache())
	p := sampler.DefaultParams()
	p.Temperature, p.MaxTokens, p.IgnoreEOS = 0, len(g.Greedy), true
	for turn := range 2 {
		res, err := e.Generate(context.Background(), &engine.Request{Tokens: g.Tokens, Params: p}, func(engine.Token) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Tokens, g.Greedy) {
			t.Errorf("turn %d: greedy ids %v, golden %v", turn, res.Tokens, g.Greedy)
		}
		if turn == 1 && res.Usage.CachedTokens == 0 {
			t.Errorf("turn %d: no cached prompt tokens", turn)
		}
		t.Logf("turn %d: %d cached prompt tokens", turn, res.Usage.CachedTokens)
	}
	if e.Stats.StepsAhead == 0 {
		t.Errorf("no decode step went ahead of its readback (%d steps)", e.Stats.DecodeSteps)
	}
	// A stop token found one step late (the step consuming it was
	// submitted ahead): the state goes back to the cached tokens, and the
	// next turn, which extends the reply, reuses them all and gives a
	// fresh run's tokens (the golden's continuation).
	at := 5
	for slices.Contains(g.Greedy[:at], g.Greedy[at]) {
		at++
	}
	stop := p
	stop.StopTokenIDs = []int32{g.Greedy[at]}
	first, err := e.Generate(context.Background(), &engine.Request{Tokens: g.Tokens, Params: stop}, func(engine.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.Tokens, g.Greedy[:at+1]) {
		t.Fatalf("stopped turn: %v, want %v", first.Tokens, g.Greedy[:at+1])
	}
	next := slices.Concat(g.Tokens, first.Tokens)
	p.MaxTokens = len(g.Greedy) - len(first.Tokens)
	res, err := e.Generate(context.Background(), &engine.Request{Tokens: next, Params: p}, func(engine.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, g.Greedy[at+1:]) || res.Usage.CachedTokens != len(next)-1 {
		t.Errorf("next turn: %v with %d cached tokens; want %v and %d", res.Tokens, res.Usage.CachedTokens, g.Greedy[at+1:], len(next)-1)
	}
}
