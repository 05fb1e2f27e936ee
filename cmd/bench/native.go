package main

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"time"

	"wasmllm/cmd/bench/internal/result"
	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
)

// native runs the CPU engine natively, in this process (goroutines over
// the CPUs, as cmd/generate -backend cpu), on m's GGUF: the same prompts,
// decode length and repeats as the browser's runs, within budget, so the
// report shows native, one-rank wasm and N-rank wasm side by side.
func native(ctx context.Context, m *benchModel, repeats, ctxLen int, budget time.Duration) *EngineReport {
	e := &EngineReport{Engine: engineNative, Detail: fmt.Sprintf("Go native, %d goroutines", runtime.NumCPU())}
	if budget < 2*time.Second {
		e.Error = "skipped: no time left in the budget"
		return e
	}
	deadline := time.Now().Add(budget)
	if err := nativeRuns(ctx, e, m, repeats, ctxLen, deadline); err != nil {
		e.Error = err.Error()
	}
	e.fill()
	return e
}

func nativeRuns(ctx context.Context, e *EngineReport, m *benchModel, repeats, ctxLen int, deadline time.Time) error {
	g, err := loader.ReadGGUF(m.gguf)
	if err != nil {
		return err
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		return err
	}
	mdl, err := model.Build(cpu.New(0), w)
	if err != nil {
		return err
	}
	eng, err := engine.New(mdl, nil, engine.Options{Context: ctxLen})
	if err != nil {
		return err
	}
	gen := func(ids []int32, decode int) (result.Run, error) {
		eng.Reset()
		p := sampler.DefaultParams()
		p.Temperature, p.IgnoreEOS, p.MaxTokens = 0, true, decode+1
		var first, last time.Time
		n := 0
		t0 := time.Now()
		_, err := eng.Generate(ctx, &engine.Request{Tokens: ids, Params: p}, func(engine.Token) error {
			now := time.Now()
			if n == 0 {
				first = now
			}
			last, n = now, n+1
			return nil
		})
		return result.Run{Prompt: len(ids), PrefillMs: ms(first.Sub(t0)), DecodeTokens: n - 1, DecodeMs: ms(last.Sub(first))}, err
	}
	if len(m.prompts) == 0 {
		return fmt.Errorf("%s: no prompts", m.name)
	}
	if _, err := gen(m.prompts[0].IDs[0], 2); err != nil { // warm up
		return err
	}
	for rep := range max(runs(m.prompts), repeats, 1) {
		for _, pr := range m.prompts {
			if rep >= cmp.Or(pr.Runs, repeats) {
				continue
			}
			if time.Now().After(deadline) {
				e.Notes = append(e.Notes, fmt.Sprintf("prompt %d run %d skipped: the time budget ran out", pr.Len, rep+1))
				continue
			}
			run, err := gen(pr.IDs[rep%len(pr.IDs)], m.decode)
			if err != nil {
				return fmt.Errorf("prompt %d: %w", pr.Len, err)
			}
			run.Rep = rep
			e.Runs = append(e.Runs, run)
			logf("%s natively: prompt %d: prefill %.1f ms (%.1f tok/s), decode %d in %.1f ms (%.2f tok/s)", m.name,
				pr.Len, run.PrefillMs, run.PrefillTokS(), run.DecodeTokens, run.DecodeMs, run.DecodeTokS())
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
