// Command convert turns a GGUF file, a Hugging Face folder, a llama2.c
// checkpoint (or a converted folder) into a wasmllm model folder:
// manifest.json, content-hashed shards holding the canonical tensors in the
// layouts the kernels read, and the tokenizer.
//
//	go run ./cmd/convert -o models/stories260K testdata/models/stories260K.gguf
//	go run ./cmd/convert -o models/llama-3.2-1b-q4 -quant q4 ~/hf/Llama-3.2-1B-Instruct
//	go run ./cmd/convert -o models/stories260K-bin -tokenizer tok512.bin stories260K.bin
//
// The whole canonical model is held in memory while it converts (about the
// size of the source; GGUF tensors are read one by one, not mapped). The
// output folder is written beside its destination and renamed into
// place at the end: it replaces an earlier model folder there, extra files
// included, so pass them again with -extra (they are read first).
//
// -quant sets the layout of the weight matrices; norms, rope_freqs and the
// MoE router are always F32.
//   - keep (default): F32 and F16 as they are, BF16 as F32, GGUF Q4_0 and
//     Q8_0 repacked losslessly as q4 and q8, the K-quants Q2_K..Q6_K kept
//     as ggml's blocks (a merge of parts of different types, such as
//     Q4_K_M's Q4_K q/k and Q6_K v, as row blocks each in its own type):
//     all lossless; Q4_1 re-quantised to q4, Q5_0 and Q5_1 to q8.
//   - q4: Q4_0 math in the planar q4 layout, the output head as q8 (as
//     llama-quantize does); Q4_0 sources are repacked losslessly.
//   - q8: Q8_0 math in the planar q8 layout; Q8_0 and Q4_0 sources convert
//     losslessly.
//   - f16: F16.
//
// A matrix whose rows are not whole groups of 32 stays F32 (keep) or
// becomes F16. The table on stdout gives each tensor's error against the
// source's exactly dequantised values (RMS, max abs, RMS relative to the
// weights' own RMS) and the total over the model.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"

	"wasmllm/convert"
	"wasmllm/manifest"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		if !writing.Load() { // nothing on disk yet: stop at once, even mid-load
			fmt.Fprintln(os.Stderr, "convert: interrupted")
			os.Exit(130)
		}
		cancel() // the conversion stops and removes its temporary folder
	}()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

// writing is set once the conversion may have files on disk.
var writing atomic.Bool

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convert -o OUT_DIR [-quant keep|q4|q8|f16] [-shard-mb 32] [-tokenizer PATH] INPUT")
		fs.PrintDefaults()
	}
	var o convert.Options
	var shardMB float64
	var reportFile string
	progress := isTerminal(stderr)
	fs.StringVar(&o.Out, "o", "", "output model folder (replaced if it holds a model)")
	fs.StringVar(&o.Quant, "quant", convert.DefaultQuant, "weight layout: keep, q4, q8 or f16")
	fs.Float64Var(&shardMB, "shard-mb", manifest.DefaultShardBytes>>20, "shard size in MiB (a fraction is allowed: 0.25)")
	fs.StringVar(&o.Tokenizer, "tokenizer", "", "tokenizer: tokenizer.json or its folder, a GGUF file, or a llama2.c tokenizer.bin")
	fs.StringVar(&o.Name, "name", "", "model name in the manifest (default: the output folder's name)")
	fs.StringVar(&reportFile, "report", "", "also write the error report as JSON to FILE")
	fs.BoolVar(&progress, "progress", progress, "show a progress bar on stderr (default: when stderr is a terminal)")
	fs.IntVar(&o.Workers, "threads", 0, "goroutines per tensor (0: all CPUs)")
	fs.Func("extra", "copy `FILE` into the model folder, such as LICENSE or README.md (repeatable)", func(s string) error {
		o.Extra = append(o.Extra, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	switch {
	case fs.NArg() != 1:
		fs.Usage()
		return fmt.Errorf("%w: want exactly one INPUT, got %d", errUsage, fs.NArg())
	case o.Out == "":
		return fmt.Errorf("%w: -o OUT_DIR is required", errUsage)
	case !(shardMB*(1<<20) >= 4096 && shardMB*(1<<20) <= manifest.MaxShardBytes):
		return fmt.Errorf("%w: -shard-mb %g out of range", errUsage, shardMB)
	}
	if err := convert.CheckQuant(o.Quant); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	o.In = fs.Arg(0)
	o.ShardBytes = int64(shardMB * (1 << 20))
	var bar *progressbar.ProgressBar
	if progress {
		o.Progress = func(n, total int64) {
			if bar == nil {
				bar = newBar(stderr, total, filepath.Base(o.Out))
			}
			bar.Add64(n)
		}
	}
	o.Writing = func() { writing.Store(true) }
	r, err := convert.Convert(ctx, o)
	if bar != nil && err == nil {
		bar.Finish()
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return err
	}
	if reportFile != "" {
		data, err := json.MarshalIndent(r, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(reportFile, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	return r.Print(stdout)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newBar(w io.Writer, total int64, desc string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("converting "+desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
	)
}
