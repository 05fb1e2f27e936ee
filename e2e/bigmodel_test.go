package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/synth"
	"wasmllm/manifest"
	"wasmllm/sampler"
)

// TestBigModels loads models of the real dimensions of
// DeepSeek-R1-Distill-Llama-70B (one layer: its 1.05 GB Q8_0 embedding and
// head, each a tensor in parts over 32 MiB shards) and Qwen3-30B-A3B (one
// layer: 128 experts of 768, whose merged gate/up experts, 403 MB a
// layer, exceed the 128 MiB binding that WebGPU grants by default and are
// split on expert boundaries; a second layer, 640 MB more to write, convert
// and load, would take the same split path again), Phi-4-mini (two layers: its tied
// 200,064-row embedding, the LM head, split under the same binding) and
// Gemma-3-1B (two layers: its 262,144-row tied embedding, 151 MiB as q4,
// in parts under the same binding) and Gemma-4-E2B (four layers, local,
// global, and the two kinds reusing their KV: heads of 256 and 512, the
// 262,144-row embedding, 216 MiB as q4, and the per-layer embeddings'
// (262144, 4×256) table, 144 MiB, in parts over the shards and kept in the
// worker's memory, perLayerEmbeddings "host", as the plan keeps the real
// E2B's) with random weights: written as GGUF,
// converted, served, loaded through the JS API in Chromium (the adapter's
// own buffer limits for the 70B, the WebGPU default binding for the MoE),
// and a prefill and one decode step there give the CPU engine's tokens
// and logprobs.
func TestBigModels(t *testing.T) {
	skipShort(t)
	if os.Getenv("WASMLLM_SKIP_BIG") != "" {
		t.Skip("WASMLLM_SKIP_BIG is set")
	}
	llama70 := synth.R1DistillLlama70B
	llama70.Layers = 1
	moe := synth.Qwen3_30BA3B
	moe.Layers = 1
	phi4 := synth.Phi4Mini
	phi4.Layers = 2
	gemma := synth.Gemma3_1B
	gemma.Layers = 2
	gemma4 := synth.Gemma4E2B
	gemma4.Layers, gemma4.Period, gemma4.SharedKV = 4, 2, 2 // s g s g, the last two on layers 0 and 1's KV
	for _, c := range []struct {
		name   string
		shape  synth.Shape
		base   string
		limits string // createEngine's limits
		parts  string // a tensor that must be in parts
		// perLayer is createEngine's perLayerEmbeddings (Gemma 4: "host",
		// the table in the worker's memory, its rows uploaded per token,
		// as the plan puts the real E2B's)
		perLayer string
	}{
		{"r1-distill-llama-70b-1l", llama70, "testdata/models/tiny-llama3-q4_0.gguf", "{}", "output.weight", ""},
		{"qwen3-30b-a3b-1l", moe, "testdata/models/tiny-qwen3moe-q4_0.gguf", "{maxStorageBufferBindingSize: 128 << 20}", "blk.0.ffn_gate_up_exps.weight", ""},
		// Phi-4-mini: its 200,064-row tied embedding (the LM head) is 330
		// MiB of q4, split under a 128 MiB binding.
		{"phi-4-mini-2l", phi4, "testdata/phi3/models/tiny-phi4mini-q4_0.gguf", "{maxStorageBufferBindingSize: 128 << 20}", "token_embd.weight", ""},
		// Gemma 3's 262k-row embedding (the tied head too) split under the
		// default 128 MiB binding
		{"gemma-3-1b-2l", gemma, "testdata/gemma/models/tiny-gemma3-q4_0.gguf", "{maxStorageBufferBindingSize: 128 << 20}", "token_embd.weight", ""},
		// Gemma 4 E2B: global heads of 512, the per-layer embeddings'
		// table split under the default 128 MiB binding
		{"gemma-4-e2b-4l", gemma4, "testdata/gemma/models/tiny-gemma4-q4_0.gguf", "{maxStorageBufferBindingSize: 128 << 20}", "per_layer_token_embd.weight", "host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			models := t.TempDir()
			dir := filepath.Join(models, c.name)
			start := time.Now()
			gguf := filepath.Join(t.TempDir(), c.name+".gguf")
			if err := synth.Write(gguf, browsertest.RepoFile(c.base), c.shape); err != nil {
				t.Fatal(err)
			}
			m := browsertest.Convert(t, gguf, dir, browsertest.ConvertOptions{Quant: "keep"})
			os.Remove(gguf)
			var inParts *manifest.TensorInfo
			for i := range m.Tensors {
				if m.Tensors[i].Name == c.parts {
					inParts = &m.Tensors[i]
				}
			}
			if inParts == nil || len(inParts.Parts) < 2 {
				t.Fatalf("%s is not in parts: %+v", c.parts, inParts)
			}
			t.Logf("%s: %s in %d shards, %s in %d parts; written and converted in %v",
				c.name, mib(m.TotalBytes()), len(m.Shards), c.parts, len(inParts.Parts), time.Since(start).Round(time.Second))

			prompt := []int32{1, 17, 255, 300, 42}
			want := bigCPURun(t, dir, prompt)

			srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
			b := browsertest.NewBrowser(t)
			b.Timeout = 10 * time.Minute
			b.Open(srv.URL + "/test.html")
			bigBrowserRun(t, b, c.name, c.limits, c.perLayer, prompt, want)
		})
	}
}

// bigBrowserRun loads the model in Chromium on WebGPU (perLayer:
// createEngine's perLayerEmbeddings) and checks that a prefill and one
// decode step give the CPU engine's tokens and logprobs.
func bigBrowserRun(t *testing.T, b *browsertest.Browser, name, limits, perLayer string, prompt []int32, want bigRun) {
	t.Helper()
	start := time.Now()
	var got struct {
		Backend  string
		Limit    float64
		IDs      []string
		Logprobs []float64
		Top      []map[string]float64
		Plan     map[string]any
	}
	b.MustRun(`(async () => {
		const e = await wasmllm.createEngine({model: "/models/`+name+`/", backend: "webgpu", kvCacheDtype: "f32", cache: false, limits: `+limits+`, perLayerEmbeddings: "`+perLayer+`"});
		const r = await e.completions.create({prompt: `+jsonIDs(prompt)+`, max_tokens: 2, temperature: 0, ignore_eos: true, logprobs: 5});
		const lp = r.choices[0].logprobs;
		const out = {Backend: e.info.backend, Limit: e.info.limits.maxStorageBufferBindingSize, IDs: lp.tokens, Logprobs: lp.token_logprobs, Top: lp.top_logprobs, Plan: e.info.plan};
		await e.unload();
		return out;
	})()`, &got)
	t.Logf("Chromium: loaded and ran in %v on WebGPU (binding limit %s, per-layer embeddings %q, plan %v): %q %v",
		time.Since(start).Round(time.Second), mib(int64(got.Limit)), perLayer, got.Plan, got.IDs, got.Logprobs)
	if got.Backend != "webgpu" || len(got.Logprobs) != 2 {
		t.Fatalf("backend %q, %d logprobs", got.Backend, len(got.Logprobs))
	}
	if onHost, _ := got.Plan["per_layer_on_host"].(bool); onHost != (perLayer == "host") {
		t.Errorf("per-layer embeddings %q: the plan keeps them on the host: %v", perLayer, got.Plan["per_layer_on_host"])
	}
	for i := range want.steps {
		w := want.steps[i]
		if got.IDs[i] != w.text && w.margin > 0.02 {
			t.Errorf("step %d: WebGPU chose %q, the CPU engine %q (margin %.3g)", i, got.IDs[i], w.text, w.margin)
		}
		if d := math.Abs(got.Logprobs[i] - w.logprob); got.IDs[i] == w.text && d > 0.01 {
			t.Errorf("step %d: %q logprob %.5f on WebGPU, %.5f on the CPU", i, w.text, got.Logprobs[i], w.logprob)
		}
		for tok, lp := range got.Top[i] {
			if c, ok := w.top[tok]; ok && math.Abs(lp-c) > 0.01 {
				t.Errorf("step %d: top %q logprob %.5f on WebGPU, %.5f on the CPU", i, tok, lp, c)
			}
		}
	}
}

// bigStep is one generated token of the CPU engine: its text, logprob,
// top logprobs by text, and its lead over the runner-up.
type bigStep struct {
	text    string
	logprob float64
	top     map[string]float64
	margin  float64
}

type bigRun struct{ steps []bigStep }

// bigCPURun runs the prompt greedily for two tokens on the CPU engine.
func bigCPURun(t *testing.T, dir string, prompt []int32) bigRun {
	t.Helper()
	start := time.Now()
	e, err := engine.Load(dir, cpu.New(0), engine.LoadOptions{Options: engine.Options{Context: 64}})
	if err != nil {
		t.Fatal(err)
	}
	p := sampler.DefaultParams()
	five := 5
	p.Temperature, p.MaxTokens, p.IgnoreEOS, p.Logprobs = 0, 2, true, &five
	var run bigRun
	_, err = e.Generate(context.Background(), &engine.Request{Tokens: prompt, Params: p}, func(tok engine.Token) error {
		s := bigStep{text: e.Tok.Decode([]int32{tok.ID}), logprob: float64(tok.Logprob), top: map[string]float64{}, margin: math.Inf(1)}
		for _, x := range tok.TopLogprobs {
			s.top[e.Tok.Decode([]int32{x.ID})] = float64(x.Logprob)
			if x.ID != tok.ID {
				s.margin = min(s.margin, float64(tok.Logprob-x.Logprob))
			}
		}
		run.steps = append(run.steps, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CPU engine: %d steps in %v: %+v", len(run.steps), time.Since(start).Round(time.Second), run.steps)
	return run
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
