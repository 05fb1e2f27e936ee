// Command bench measures wasmllm in headless Chromium against the
// adapter's own limits and against a peer, in one run:
//
//   - roofline probes on the adapter in use: a streaming read over a few
//     workgroup shapes (shaders/bench_read.wgsl) and an f32 FMA loop
//     (shaders/bench_fma.wgsl);
//   - the hot kernels (q4/q8 GEMV at Llama-3.2-1B's decode shapes, the
//     prefill GEMM, decode attention at 1k and 4k positions, Qwen3-MoE's
//     expert GEMVs), each as GB/s or GFLOP/s and its ratio to the probe;
//   - every test model (testdata/models/*.gguf, testdata/gemma/models/*.gguf)
//     and synthetic Llama-3.2-1B- and Gemma-3-1B-shaped q4 models written
//     on the fly, through
//     engine.Engine.Generate on WebGPU and on the CPU backend, and through
//     wllama (llama.cpp in wasm, from npm with cmd/bench/page/package-lock.json) on
//     the same GGUF files: prefill tok/s at 16, 128 and 512 prompt tokens,
//     decode tok/s after each, the decode bandwidth ratio, per-token
//     dispatches, submits, readback bytes and Go-side encode time, and a
//     decode step's most dispatches per layer of each kind (local, global,
//     with per-layer embeddings, MoE: ratios dispatches_per_layer_kind_*);
//   - the native engine (Go, this process) beside llama.cpp's own CPU
//     build (node-llama-cpp 3.22.1's prebuilt linux-x64 addon, installed
//     from cmd/bench/llamacpp/package-lock.json into the user's cache, run
//     by cmd/bench/llamacpp/run.mjs) on the synthetic model's GGUF, with
//     the same threads, prompts and decode length: ratios
//     decode_native_vs_llamacpp and prefill_native_vs_llamacpp;
//   - createEngine's load time from the network and from Cache Storage,
//     next to the time to read the same cached bytes alone;
//   - the synthetic Llama-3.2-1B in llama-quantize's Q4_K_M mix
//     (synth.Llama32_1B_Q4KM), converted with -quant keep: ratio
//     q4_k_m_bytes_vs_gguf, the weight bytes a decode token reads from the
//     folder over the GGUF's (1: every merged q/k/v kept in its parts'
//     types), and a short native run of it;
//   - Qwen3.5: synthetic Qwen3.5-2B- and Qwen3.5-35B-A3B-shaped models
//     (cut in layers and experts) on WebGPU, and the shapes table
//     (shapes.go): for those two and Qwen3-1.7B, weight bytes read per
//     decode token, KV + recurrent state bytes at 4k and 32k positions,
//     and the dispatches per layer of each kind recorded in the run.
//
// It writes bench.json, bench.txt and decode.svg to -out
// (build/bench), prints the table and one `ratio NAME VALUE` line per
// ratio, and keeps within -budget (20 minutes on a 2-core machine),
// shrinking what does not fit and saying so in the notes.
//
// Usage: go run ./cmd/bench [-short] [-models stories,qwen3] [-budget 19m]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"wasmllm/internal/testkit/browsertest"
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// flagList is a repeatable string flag.
type flagList []string

func (l *flagList) String() string     { return strings.Join(*l, " ") }
func (l *flagList) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var o options
	var flags flagList
	flag.StringVar(&o.Out, "out", "build/bench", "output folder (bench.json, bench.txt, decode.svg; models and builds)")
	flag.BoolVar(&o.Short, "short", false, "a quick end-to-end run: stories260K only, small kernel shapes, one run per prompt")
	flag.DurationVar(&o.Budget, "budget", 19*time.Minute, "time for the whole run; later work shrinks to fit")
	flag.StringVar(&o.Models, "models", "", "only test models whose name contains one of these (comma-separated)")
	flag.BoolVar(&o.Synthetic, "synthetic", true, "also bench the synthetic Llama-3.2-1B- and Gemma-3-1B-shaped q4 models (-models filters the Gemma one)")
	flag.IntVar(&o.SynthLayers, "synthetic-layers", 0, "layers of the synthetic model (0: 16, or 1 on a software adapter)")
	flag.IntVar(&o.Repeats, "repeats", 3, "runs per prompt length and engine (medians are reported)")
	flag.StringVar(&o.Peer, "peer", "auto", "wllama: on, off, or auto (when npm is installed)")
	flag.IntVar(&o.PeerThreads, "peer-threads", 0, "wllama's threads (0: one per CPU, or 1 when the load average is over the CPUs)")
	flag.StringVar(&o.Engines, "engines", "", "only these engines, comma-separated: webgpu (with the kernel table), firefox (with its kernel table), wllama, cpu, native, llamacpp (llama.cpp natively, on the synthetic model); empty for all")
	flag.IntVar(&o.CPURanks, "cpu-ranks", 0, "the CPU engine's ranks (0: one per CPU, at most 4, as createEngine's default)")
	flag.StringVar(&o.Browser, "browser", browsertest.Chromium(), "Chromium binary")
	flag.StringVar(&o.Firefox, "firefox", browsertest.Firefox(), "Firefox binary for the WebGPU runs in Firefox, or off")
	flag.Var(&flags, "chromium-flag", "extra Chromium flag, e.g. --enable-features=Vulkan (repeatable)")
	flag.BoolVar(&o.Verbose, "v", false, "print every console message of the page")
	render := flag.String("render", "", "run nothing: rewrite bench.txt and the chart in -out from this bench.json")
	flag.Parse()
	if *render != "" {
		if err := rerender(*render, o.Out); err != nil {
			logf("%v", err)
			os.Exit(1)
		}
		return
	}
	o.Flags = flags
	switch o.Peer {
	case "auto", "on", "off":
	default:
		fmt.Fprintf(os.Stderr, "bench: -peer %q: want on, off or auto\n", o.Peer)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := run(ctx, o)
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	if err := writeOutputs(rep, o.Out); err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	logf("done in %.0f s: %s/bench.json, bench.txt, %s", rep.Seconds, o.Out, rep.ChartFile)
}
