//go:build js

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"wasmllm/cmd/bench/internal/result"
	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/gpu"
	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
)

// prefillChunk is engine.Options.PrefillChunk's default: the largest batch
// a prompt is run in.
const prefillChunk = 128

// prompt is one prompt length's token ids.
type prompt struct {
	Len  int     `json:"len"`
	IDs  []int32 `json:"ids"`
	Runs int     `json:"runs"` // runs of this length (0: Repeats)
}

// modelConfig is the "model" phase's part of the config.
type modelConfig struct {
	Name    string   `json:"name"`
	URL     string   `json:"url"` // the GGUF file on the page's server
	Weight  float64  `json:"weight"`
	Context int      `json:"context"`
	Decode  int      `json:"decode"`  // tokens to decode after the first
	Repeats int      `json:"repeats"` // runs per prompt length
	Prompts []prompt `json:"prompts"` // ascending lengths
	// EncodeSteps is the length of the separate decode loop that times
	// the Go side of a step (webgpu only); 0 skips it.
	EncodeSteps int `json:"encode_steps"`
	// Ranks is the CPU engine's rank count (cpu only; 0 or 1: one).
	Ranks int `json:"ranks"`
}

// runModels opens the backend and runs each model in turn, each within its
// share of the time to the deadline. A model that fails has its error in
// its result; the others still run.
func runModels(ctx context.Context, c *config, deadline time.Time) ([]*result.Model, error) {
	var be modelBackend
	switch c.Backend {
	case "webgpu":
		gb, d, err := gpu.OpenBackend(ctx, gpu.Options{}, gpu.BackendOptions{})
		if err != nil {
			return nil, err
		}
		defer d.Close()
		a := adapterOf(d)
		be = modelBackend{name: c.Backend, b: gb, dev: d, gb: gb, adapter: &a}
	case "cpu":
		be = modelBackend{name: c.Backend, b: cpu.New(1)}
	default:
		return nil, fmt.Errorf("backend %q: want webgpu or cpu", c.Backend)
	}
	weights := 0.0
	for _, m := range c.Models {
		weights += max(m.Weight, 1e-3)
	}
	var out []*result.Model
	for i := range c.Models {
		mc := &c.Models[i]
		w := max(mc.Weight, 1e-3)
		share := time.Duration(float64(time.Until(deadline)) * w / weights)
		weights -= w
		res, err := runModel(ctx, &be, mc, time.Now().Add(share), logf)
		if err != nil {
			logf("%s on %s: %v", mc.Name, be.name, err)
			if res == nil {
				res = &result.Model{Model: mc.Name, Backend: be.name}
			}
			res.Error = err.Error()
		}
		out = append(out, res)
	}
	return out, nil
}

// modelBackend is the backend the models of a phase share.
type modelBackend struct {
	name    string
	b       model.Backend
	dev     *webgpu.Device // webgpu only
	gb      *gpu.Backend   // webgpu only
	adapter *result.Adapter
}

// runModel loads one GGUF model and times generation at each prompt
// length, within the deadline.
func runModel(ctx context.Context, be *modelBackend, c *modelConfig, deadline time.Time, log func(string, ...any)) (*result.Model, error) {
	if len(c.Prompts) == 0 {
		return nil, fmt.Errorf("%s: no prompts", c.Name)
	}
	start := time.Now()
	data, err := fetchBytes(ctx, c.URL)
	if err != nil {
		return nil, err
	}
	g, err := loader.ParseGGUF(c.Name, data)
	if err != nil {
		return nil, err
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(g)
	if err != nil {
		return nil, fmt.Errorf("%s: tokenizer: %w", c.Name, err)
	}
	cfg := w.Config
	res := &result.Model{Model: c.Name, Backend: be.name, Adapter: be.adapter, Arch: cfg.Arch, Layers: cfg.Layers, Hidden: cfg.Hidden,
		Vocab: cfg.Vocab, Experts: cfg.Experts, Context: c.Context}
	res.WeightBytes, res.ActiveBytes, err = weightBytes(w)
	if err != nil {
		return nil, err
	}
	b, dev, gb := be.b, be.dev, be.gb
	if c.Ranks > 1 && gb == nil {
		// A backend of its own per model, so each model's shares on the
		// ranks end with it.
		cb, err := cpu.NewRanks(cpu.RankOptions{Ranks: c.Ranks})
		if err != nil {
			return nil, err
		}
		defer cb.Close()
		b = cb
	}
	res.Ranks = max(1, c.Ranks)
	m, err := model.Build(b, w)
	if err != nil {
		return nil, err
	}
	w, g, data = nil, nil, nil
	// The KV cache is what createEngine gives by default: f16 on WebGPU,
	// f32 on the CPU.
	kv := loader.F32
	if gb != nil {
		kv = loader.F16
	}
	e, err := engine.New(m, tok, engine.Options{Context: c.Context, KVDType: kv})
	if err != nil {
		return nil, err
	}
	// Only attention layers keep keys and values (a Gated DeltaNet
	// layer's state is the same size at any position).
	res.LayerTypes = cfg.LayerTypes
	res.KVDType, res.KVBytesPerPos = "F32", int64(2*cfg.AttentionLayers()*cfg.KVHeads*cfg.HeadDim*4)
	if e.KVDType() == loader.F16 {
		res.KVDType, res.KVBytesPerPos = "F16", res.KVBytesPerPos/2
	}
	res.BuildMs = msSince(start)
	log("%s on %s: built in %.0f ms, %d weight bytes, %d read per token", c.Name, be.name, res.BuildMs, res.WeightBytes, res.ActiveBytes)

	gen := func(ids []int32, decode int) (result.Run, *counters, error) {
		e.Reset()
		p := sampler.DefaultParams()
		p.Temperature, p.IgnoreEOS, p.MaxTokens = 0, true, decode+1
		var first, last time.Time
		var c0 counters
		n := 0
		t0 := time.Now()
		_, err := e.Generate(ctx, &engine.Request{Tokens: ids, Params: p}, func(engine.Token) error {
			now := time.Now()
			if n == 0 {
				first = now
				c0 = snapshot(dev, gb)
			}
			last, n = now, n+1
			return nil
		})
		if err != nil {
			return result.Run{}, nil, err
		}
		c1 := snapshot(dev, gb)
		d := c1.sub(c0)
		return result.Run{Prompt: len(ids), PrefillMs: ms(first.Sub(t0)), DecodeTokens: n - 1, DecodeMs: ms(last.Sub(first))}, &d, nil
	}

	// Warm up: compile the kernels and record the programs of a decode and
	// of each prefill chunk size the prompts use. The first prompt runs
	// twice, the second time to predict the cost of the others' warm-up: a
	// chunk that would take over a quarter of the time left is not warmed
	// up, and its first run pays instead.
	first := c.Prompts[0].IDs[:min(len(c.Prompts[0].IDs), prefillChunk)]
	if _, _, err := gen(first, 2); err != nil {
		return nil, err
	}
	timed, _, err := gen(first, 0)
	if err != nil {
		return nil, err
	}
	warm := map[int]bool{len(first): true}
	for _, pr := range c.Prompts[1:] {
		n := min(len(pr.IDs), prefillChunk)
		if warm[n] {
			continue
		}
		warm[n] = true
		if timed.PrefillMs*float64(n)/float64(len(first)) > float64(time.Until(deadline).Milliseconds())/4 {
			res.Notes = append(res.Notes, fmt.Sprintf("no warm-up run of a %d-token chunk (the time budget is short): the first run with one pays for compiling", n))
			continue
		}
		if _, _, err := gen(pr.IDs[:n], 0); err != nil {
			return nil, err
		}
	}
	var total counters
	var steps int
	var ahead int64               // decode steps submitted before the previous readback
	measured := map[int]float64{} // prompt length -> ms of its last run
	for rep := range max(c.Repeats, 1) {
		for _, pr := range c.Prompts {
			if pr.Runs > 0 && rep >= pr.Runs {
				continue
			}
			need := measured[pr.Len]
			if need == 0 && len(res.Runs) > 0 {
				// Predict from the shortest prompt: prefill grows with the
				// prompt, decode does not.
				r0 := res.Runs[0]
				need = r0.PrefillMs*float64(pr.Len)/float64(r0.Prompt) + r0.DecodeMs
			}
			if left := time.Until(deadline); need > 0 && float64(left.Milliseconds()) < need {
				note := fmt.Sprintf("prompt %d run %d skipped: about %.1f s needed, %.1f s left of the time budget", pr.Len, rep+1, need/1e3, left.Seconds())
				log("%s on %s: %s", c.Name, be.name, note)
				res.Notes = append(res.Notes, note)
				continue
			}
			a0 := e.Stats.StepsAhead
			run, cnt, err := gen(pr.IDs, c.Decode)
			if err != nil {
				return res, fmt.Errorf("prompt %d: %w", pr.Len, err)
			}
			ahead += e.Stats.StepsAhead - a0
			run.Rep = rep
			res.Runs = append(res.Runs, run)
			measured[pr.Len] = run.PrefillMs + run.DecodeMs
			total = total.add(*cnt)
			steps += run.DecodeTokens
			log("%s on %s: prompt %d: prefill %.1f ms (%.1f tok/s), decode %d in %.1f ms (%.2f tok/s)", c.Name, be.name,
				pr.Len, run.PrefillMs, run.PrefillTokS(), run.DecodeTokens, run.DecodeMs, run.DecodeTokS())
		}
	}
	if gb != nil && steps > 0 {
		pt := total.perToken(steps)
		res.PerToken = &pt
		if c.EncodeSteps > 0 && time.Until(deadline) > 0 {
			if err := encodeTime(m, gb, c.Prompts[0].IDs, c.EncodeSteps, c.Context, kv, res.PerToken); err != nil {
				return nil, err
			}
		}
		// The last Forward was a decode step's.
		res.LayerDispatches = gb.LayerDispatches()
		f := float64(ahead) / float64(steps)
		res.StepsAhead = &f
	}
	return res, nil
}

// encodeTime runs a decode loop outside the engine, on a cache of the
// engine's capacity (decode attention's work follows the capacity), to
// split a step's time into the Go side (Forward and Argmax only record
// commands) and the rest.
func encodeTime(m *model.Model, b *gpu.Backend, prompt []int32, steps, capacity int, kv loader.DType, pt *result.PerToken) error {
	cache, err := m.NewCacheOf(kv, capacity)
	if err != nil {
		return err
	}
	defer b.FreeKVCache(cache)
	am := b.NewI32(1)
	defer b.Free(am)
	id := make([]int32, 1)
	logits, err := m.Forward(cache, prompt, 0, false)
	if err != nil {
		return err
	}
	b.Argmax(am, logits)
	if err := b.ReadI32(am, id); err != nil {
		return err
	}
	var enc, all time.Duration
	for i := range steps {
		t0 := time.Now()
		if logits, err = m.Forward(cache, id, len(prompt)+i, false); err != nil {
			return err
		}
		b.Argmax(am, logits)
		t1 := time.Now()
		if err := b.ReadI32(am, id); err != nil {
			return err
		}
		enc += t1.Sub(t0)
		all += time.Since(t0)
	}
	pt.EncodeMs = ms(enc) / float64(steps)
	pt.StepMs = ms(all) / float64(steps)
	return nil
}

// counters are the device's and the backend's counts at one moment.
type counters struct {
	d webgpu.Stats
	b gpu.BackendStats
}

func snapshot(d *webgpu.Device, b *gpu.Backend) counters {
	if d == nil {
		return counters{}
	}
	return counters{d: d.Stats(), b: b.Stats()}
}

func (c counters) sub(o counters) counters {
	return counters{d: c.d.Sub(o.d), b: gpu.BackendStats{ProgramBuilds: c.b.ProgramBuilds - o.b.ProgramBuilds, Flushes: c.b.Flushes - o.b.Flushes}}
}

func (c counters) add(o counters) counters {
	d := c.d
	d.Dispatches += o.d.Dispatches
	d.Submits += o.d.Submits
	d.Maps += o.d.Maps
	d.BytesRead += o.d.BytesRead
	d.JSCalls += o.d.JSCalls
	return counters{d: d, b: gpu.BackendStats{ProgramBuilds: c.b.ProgramBuilds + o.b.ProgramBuilds, Flushes: c.b.Flushes + o.b.Flushes}}
}

func (c counters) perToken(n int) result.PerToken {
	f := float64(n)
	return result.PerToken{Dispatches: float64(c.d.Dispatches) / f, Submits: float64(c.d.Submits) / f, Maps: float64(c.d.Maps) / f,
		BytesRead: float64(c.d.BytesRead) / f, JSCalls: float64(c.d.JSCalls) / f, ProgramBuilds: float64(c.b.ProgramBuilds) / f}
}

// weightBytes returns the bytes of every weight as the GPU backend holds
// it (Q4_0 and Q8_0 repacked to the planar layouts, F16 kept, the rest
// widened to F32) and the bytes one decode token reads: every matrix in
// full except the embedding (one row; the whole table again as a tied
// lm_head) and the experts (only the chosen ones).
func weightBytes(w *model.Weights) (all, active int64, err error) {
	c := w.Config
	for name, t := range w.Tensors {
		n := t.NumElements()
		var size int
		switch t.DType {
		case loader.Q4_0, loader.Q4:
			size, err = loader.Q4.Size(n)
		case loader.Q8_0, loader.Q8:
			size, err = loader.Q8.Size(n)
		case loader.F16:
			size = 2 * n
		default:
			size = 4 * n
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
		s := int64(size)
		all += s
		switch {
		case model.OnHost(name):
		case name == model.NameEmbed:
			active += s / int64(c.Vocab)
			if c.TiedEmbeddings {
				active += s
			}
		case strings.HasSuffix(name, "_exps.weight") && c.Experts > 0:
			active += s / int64(c.Experts) * int64(c.ExpertsUsed)
		default:
			active += s
		}
	}
	return all, active, nil
}

func adapterOf(d *webgpu.Device) result.Adapter {
	return result.Adapter{Vendor: d.AdapterInfo.Vendor, Architecture: d.AdapterInfo.Architecture, Device: d.AdapterInfo.Device,
		Description: d.AdapterInfo.Description, Fallback: d.AdapterInfo.Fallback, Subgroups: d.Features.Subgroups,
		ShaderF16: d.Features.ShaderF16, MaxStorageBufferBindingSize: d.Limits.MaxStorageBufferBindingSize,
		MaxBufferSize: d.Limits.MaxBufferSize}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
