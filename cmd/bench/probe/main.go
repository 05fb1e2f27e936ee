//go:build js

// Command probe is the browser side of cmd/bench (GOOS=js): in the bench's
// page it runs one phase and hands its result, as JSON, to the page's
// __benchDone function.
//
//   - "kernels": the roofline probes (streaming read over a few workgroup
//     shapes, an f32 FMA loop) and the hot kernels through the WebGPU
//     backend: q4/q8 GEMV at decode shapes, the prefill GEMM, decode
//     attention at 1k and 4k positions, the MoE expert GEMVs.
//   - "model": one GGUF model on one backend (webgpu or cpu) through
//     engine.Engine.Generate at each prompt length, with the per-token
//     counters of the decode steps.
//
// The page sets globalThis.__benchConfig (JSON, see config) before running it;
// progress goes to the console as lines starting with "probe: ". Under
// cmd/wasmexec the config comes from $WASMLLM_BENCH_CONFIG and the result
// is printed.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall/js"
	"time"

	"wasmllm/cmd/bench/internal/result"
	"wasmllm/gpu"
	"wasmllm/loader"
)

// config is what the driver asks for.
type config struct {
	Phase   string  `json:"phase"`    // "kernels" or "model"
	Quick   bool    `json:"quick"`    // small shapes (the bench's -short mode)
	BudgetS float64 `json:"budget_s"` // seconds this phase may take
	// TargetMs is the wall time of one timed submit (default 40).
	TargetMs int `json:"target_ms"`
	// Backend and Models are the "model" phase's: models run one after
	// the other on one backend ("webgpu" or "cpu"), so a WebGPU device
	// compiles each kernel once. Each gets the part of the time left that
	// its Weight is of the weights left.
	Backend string        `json:"backend"`
	Models  []modelConfig `json:"models,omitempty"`
}

// output is what the page gets: one of the results, or the error.
type output struct {
	Kernels *result.Kernels `json:"kernels,omitempty"`
	Models  []*result.Model `json:"models,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func main() {
	var out output
	var c config
	text := os.Getenv("WASMLLM_BENCH_CONFIG") // under cmd/wasmexec, for debugging
	if raw := js.Global().Get("__benchConfig"); raw.Type() == js.TypeString {
		text = raw.String()
	}
	if text == "" {
		out.Error = "no __benchConfig on the page"
	} else if err := json.Unmarshal([]byte(text), &c); err != nil {
		out.Error = fmt.Sprintf("__benchConfig: %v", err)
	} else if err := run(&c, &out); err != nil {
		out.Error = err.Error()
	}
	b, err := json.Marshal(&out)
	if err != nil {
		b, _ = json.Marshal(output{Error: err.Error()})
	}
	done := js.Global().Get("__benchDone")
	if done.Type() != js.TypeFunction {
		fmt.Printf("%s\n", b)
		if out.Error != "" {
			os.Exit(1)
		}
		return
	}
	done.Invoke(string(b))
	// Stay alive until the driver leaves the page: callbacks the WebGPU
	// device registered may still fire, and an exited program throws.
	keep := js.FuncOf(func(js.Value, []js.Value) any { return nil })
	js.Global().Set("__benchKeep", keep)
	select {}
}

func logf(format string, args ...any) { fmt.Printf("probe: "+format+"\n", args...) }

func run(c *config, out *output) error {
	ctx := context.Background()
	budget := time.Duration(c.BudgetS * float64(time.Second))
	if budget <= 0 {
		budget = 10 * time.Minute
	}
	deadline := time.Now().Add(budget)
	switch c.Phase {
	case "kernels":
		k, err := runKernels(ctx, c, deadline)
		out.Kernels = k
		return err
	case "model":
		ms, err := runModels(ctx, c, deadline)
		out.Models = ms
		return err
	}
	return fmt.Errorf("unknown phase %q", c.Phase)
}

// kernelCases are Llama-3.2-1B's decode shapes (hidden 2048, 32/8 heads of
// 64, ffn 8192, vocab 128256; gate_up also as each K-quant's blocks), its
// prefill GEMM at 128 tokens (q4 and Q4_K), and
// Qwen3-30B-A3B's experts (hidden 2048, 128 experts of 768, top 8) for one
// token and a 128-token prefill chunk, by the
// names of result.KernelNames(false); quick ones are small.
func kernelCases(quick bool) map[string]func(k *kernelBench, name string) error {
	if quick {
		return map[string]func(k *kernelBench, name string) error{
			"gemv_q4":          func(k *kernelBench, n string) error { return k.gemv(n, loader.Q4, 1024, 1024) },
			"gemv_q8":          func(k *kernelBench, n string) error { return k.gemv(n, loader.Q8, 1024, 1024) },
			"gemv_q4_k":        func(k *kernelBench, n string) error { return k.gemv(n, loader.Q4_K, 1024, 1024) },
			"gemv_q6_k":        func(k *kernelBench, n string) error { return k.gemv(n, loader.Q6_K, 1024, 1024) },
			"gemv_q5_k":        func(k *kernelBench, n string) error { return k.gemv(n, loader.Q5_K, 1024, 1024) },
			"gemv_q3_k":        func(k *kernelBench, n string) error { return k.gemv(n, loader.Q3_K, 1024, 1024) },
			"gemv_q2_k":        func(k *kernelBench, n string) error { return k.gemv(n, loader.Q2_K, 1024, 1024) },
			"gemm_q4":          func(k *kernelBench, n string) error { return k.gemm(n, loader.Q4, 64, 256, 256) },
			"gemm_q4_k":        func(k *kernelBench, n string) error { return k.gemm(n, loader.Q4_K, 128, 256, 256) },
			"attn_decode_1k":   func(k *kernelBench, n string) error { return k.attention(n, loader.F32, 32, 8, 64, 1024) },
			"moe_q4":           func(k *kernelBench, n string) error { return k.moe(n, loader.Q4, 1, 256, 16, 4, 256) },
			"moe_q4_k":         func(k *kernelBench, n string) error { return k.moe(n, loader.Q4_K, 1, 256, 16, 4, 256) },
			"moe_prefill_q4":   func(k *kernelBench, n string) error { return k.moe(n, loader.Q4, 16, 256, 16, 4, 256) },
			"moe_prefill_q4_k": func(k *kernelBench, n string) error { return k.moe(n, loader.Q4_K, 16, 256, 16, 4, 256) },
			"attend_seq":       func(k *kernelBench, n string) error { return k.attendSeq(n, 4, 64, 4, 32) },
			"encoder_q8_0":     func(k *kernelBench, n string) error { return k.encoder(n, loader.Q8_0, 4, 32, 128, 2) },
		}
	}
	return map[string]func(k *kernelBench, name string) error{
		"gemv_q4_qkv":     func(k *kernelBench, n string) error { return k.gemv(n, loader.Q4, 3072, 2048) },
		"gemv_q4_gate_up": func(k *kernelBench, n string) error { return k.gemv(n, loader.Q4, 16384, 2048) },
		"gemv_q4_down":    func(k *kernelBench, n string) error { return k.gemv(n, loader.Q4, 2048, 8192) },
		"gemv_q4_lm_head": func(k *kernelBench, n string) error { return k.gemv(n, loader.Q4, 128256, 2048) },
		"gemv_q8_gate_up": func(k *kernelBench, n string) error { return k.gemv(n, loader.Q8, 16384, 2048) },
		// The K-quants, kept as ggml's blocks: Q4_K_M's two types, then the
		// rest of Q5_K_M's, Q3_K_M's and Q2_K's.
		"gemv_q4_k_gate_up": func(k *kernelBench, n string) error { return k.gemv(n, loader.Q4_K, 16384, 2048) },
		"gemv_q6_k_gate_up": func(k *kernelBench, n string) error { return k.gemv(n, loader.Q6_K, 16384, 2048) },
		"gemv_q5_k_gate_up": func(k *kernelBench, n string) error { return k.gemv(n, loader.Q5_K, 16384, 2048) },
		"gemv_q3_k_gate_up": func(k *kernelBench, n string) error { return k.gemv(n, loader.Q3_K, 16384, 2048) },
		"gemv_q2_k_gate_up": func(k *kernelBench, n string) error { return k.gemv(n, loader.Q2_K, 16384, 2048) },
		"gemm_q4":           func(k *kernelBench, n string) error { return k.gemm(n, loader.Q4, 128, 3072, 2048) },
		// Q4_K_M's prefill: the K-quant GEMM tile at the same shape
		"gemm_q4_k":      func(k *kernelBench, n string) error { return k.gemm(n, loader.Q4_K, 128, 3072, 2048) },
		"attn_decode_1k": func(k *kernelBench, n string) error { return k.attention(n, loader.F32, 32, 8, 64, 1024) },
		"attn_decode_4k": func(k *kernelBench, n string) error { return k.attention(n, loader.F32, 32, 8, 64, 4096) },
		// The default cache on WebGPU: half the bytes, unpacked in the kernel.
		"attn_decode_4k_f16": func(k *kernelBench, n string) error { return k.attention(n, loader.F16, 32, 8, 64, 4096) },
		"moe_q4":             func(k *kernelBench, n string) error { return k.moe(n, loader.Q4, 1, 2048, 128, 8, 768) },
		"moe_q4_k":           func(k *kernelBench, n string) error { return k.moe(n, loader.Q4_K, 1, 2048, 128, 8, 768) },
		// a prefill chunk of 128 tokens through the same experts
		"moe_prefill_q4":   func(k *kernelBench, n string) error { return k.moe(n, loader.Q4, 128, 2048, 128, 8, 768) },
		"moe_prefill_q4_k": func(k *kernelBench, n string) error { return k.moe(n, loader.Q4_K, 128, 2048, 128, 8, 768) },
		// text embeddings (issue 38): bge-small's attention over 64 inputs
		// of 128 tokens, then 16 such inputs through a bge-small-shaped
		// bert with Q8_0 matrices (16, not 64: a software adapter takes
		// seconds a batch)
		"attend_seq":   func(k *kernelBench, n string) error { return k.attendSeq(n, 64, 128, 12, 32) },
		"encoder_q8_0": func(k *kernelBench, n string) error { return k.encoder(n, loader.Q8_0, 16, 128, 384, 12) },
	}
}

// runKernels runs the probes, then each kernel while time is left.
func runKernels(ctx context.Context, c *config, deadline time.Time) (*result.Kernels, error) {
	be, d, err := gpu.OpenBackend(ctx, gpu.Options{}, gpu.BackendOptions{})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	res := &result.Kernels{Adapter: adapterOf(d)}
	logf("adapter: %s %s %s (fallback %v, subgroups %v, shader-f16 %v)", d.AdapterInfo.Vendor, d.AdapterInfo.Architecture,
		d.AdapterInfo.Description, d.AdapterInfo.Fallback, d.Features.Subgroups, d.Features.ShaderF16)
	target := time.Duration(max(c.TargetMs, 1)) * time.Millisecond
	if c.TargetMs == 0 {
		target = 40 * time.Millisecond
	}
	t := &timer{target: target, trials: 3}
	rl, err := newRoofline(d, t, logf)
	if err != nil {
		return nil, err
	}
	res.Roofline.SyncMs = t.syncMs
	size := int64(256 << 20)
	if c.Quick {
		size = 32 << 20
	}
	size = min(size, int64(d.Limits.MaxStorageBufferBindingSize), int64(d.Limits.MaxBufferSize)) &^ 15
	if err := rl.read(size, &res.Roofline); err != nil {
		return nil, fmt.Errorf("read probe: %w", err)
	}
	if err := rl.fma(&res.Roofline); err != nil {
		return nil, fmt.Errorf("fma probe: %w", err)
	}
	kb := &kernelBench{be: be, t: t, rng: newRand(), sync: be.NewF32(1), dst: make([]float32, 1), rf: &res.Roofline, log: logf}
	cases := kernelCases(c.Quick)
	// Two passes through the table, each row kept from the faster: on a
	// shared VM a kernel's rate drifts by 10-20% over seconds, and the
	// passes are half a minute or more apart.
	passes := 2
	if c.Quick {
		passes = 1
	}
	for pass := range passes {
		for _, name := range result.KernelNames(c.Quick) {
			if time.Now().After(deadline) {
				note := fmt.Sprintf("kernel %s skipped in pass %d: the phase's time budget is spent", name, pass+1)
				logf("%s", note)
				res.Notes = append(res.Notes, note)
				continue
			}
			run, ok := cases[name]
			if !ok {
				return nil, fmt.Errorf("no kernel %s", name)
			}
			if err := run(kb, name); err != nil {
				return nil, err
			}
		}
	}
	res.Kernels = result.Fastest(kb.out)
	return res, nil
}
