package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"wasmllm/cmd/bench/internal/result"
)

// The native peer: llama.cpp's own CPU build, the prebuilt linux-x64
// binary of node-llama-cpp (llamacpp/package-lock.json pins it and every
// dependency by their sha512), driven by llamacpp/run.mjs through
// node-llama-cpp's API on the synthetic model's GGUF, with the native
// engine's threads. Nothing is compiled: run.mjs asks for build "never".
const (
	engineLlamaCpp  = "llamacpp-native"
	llamaCppPackage = "node-llama-cpp"
	llamaCppVersion = "3.22.1"
	// llamaCppAddon is the sha256 of the prebuilt addon the lock installs
	// (@node-llama-cpp/linux-x64 3.22.1's bins/linux-x64/llama-addon.node),
	// checked after every install and before every run.
	llamaCppAddon = "48c1680dc565201570ee3591b6444c805958e78ef6e2f7a202849a21f7f12833"
)

// llamaCppAddonPath is the addon in an install folder.
func llamaCppAddonPath(dir string) string {
	return filepath.Join(dir, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64", "llama-addon.node")
}

// installLlamaCpp installs the locked packages of cmd/bench/llamacpp with
// npm into a cache folder (the user's cache, kept between runs), unless
// it already holds them, and returns the folder. Only linux/amd64 has the
// prebuilt binary the lock names.
func installLlamaCpp(ctx context.Context, root string) (string, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("no prebuilt llama.cpp for %s/%s in the lock (linux-x64 only)", runtime.GOOS, runtime.GOARCH)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "wasmllm", "bench-"+llamaCppPackage+"-"+llamaCppVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(root, "cmd", "bench", "llamacpp")
	changed := false
	for _, f := range []string{"package.json", "package-lock.json", "run.mjs"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		if old, err := os.ReadFile(filepath.Join(dir, f)); err == nil && bytes.Equal(old, b) {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return "", err
		}
		changed = changed || f != "run.mjs"
	}
	if !changed && checkAddon(dir) == nil {
		return dir, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errNoNpm
	}
	// npm install with the lock there installs the versions it names,
	// checked against its sha512s (npm ci refuses this lock: it lacks the
	// optional builds for other platforms, which the registry may not
	// hold). No install scripts (node-llama-cpp's would look for a build),
	// no optional packages (the CUDA and Vulkan builds), the lock kept.
	cmd := exec.CommandContext(ctx, npm, "install", "--no-save", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=optional")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install in %s: %v\n%s", dir, err, b)
	}
	return dir, checkAddon(dir)
}

// checkAddon checks the installed addon's sha256.
func checkAddon(dir string) error {
	f, err := os.Open(llamaCppAddonPath(dir))
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != llamaCppAddon {
		return fmt.Errorf("%s: sha256 %s, want %s", llamaCppAddonPath(dir), got, llamaCppAddon)
	}
	return nil
}

// llamaCppJob is run.mjs's input.
type llamaCppJob struct {
	Model   string        `json:"model"`
	Threads int           `json:"threads"`
	Context int           `json:"context"`
	Decode  int           `json:"decode"`
	Runs    []llamaCppRun `json:"runs"`
}

type llamaCppRun struct {
	Warmup bool    `json:"warmup,omitempty"`
	IDs    []int32 `json:"ids"`
}

// llamaCppOut is one line of run.mjs's output.
type llamaCppOut struct {
	Prompt       int     `json:"prompt"`
	PrefillMs    float64 `json:"prefill_ms"`
	DecodeTokens int     `json:"decode_tokens"`
	DecodeMs     float64 `json:"decode_ms"`
}

// llamaCpp runs llama.cpp natively (installed at dir) on m's GGUF: the
// prompts, decode length and repeats of the native engine's runs
// (nativeRuns), on as many threads as the native engine's goroutines, a
// warm-up first, within budget.
func llamaCpp(ctx context.Context, dir string, m *benchModel, repeats, ctxLen int, budget time.Duration) *EngineReport {
	threads := runtime.GOMAXPROCS(0)
	e := &EngineReport{Engine: engineLlamaCpp, Detail: fmt.Sprintf("llama.cpp CPU (%s %s, prebuilt linux-x64), %d threads", llamaCppPackage, llamaCppVersion, threads)}
	if budget < 2*time.Second {
		e.Error = "skipped: no time left in the budget"
		return e
	}
	if err := llamaCppRuns(ctx, e, dir, m, repeats, ctxLen, threads, budget); err != nil {
		e.Error = err.Error()
	}
	e.fill()
	return e
}

func llamaCppRuns(ctx context.Context, e *EngineReport, dir string, m *benchModel, repeats, ctxLen, threads int, budget time.Duration) error {
	if err := checkAddon(dir); err != nil {
		return err
	}
	if len(m.prompts) == 0 {
		return fmt.Errorf("%s: no prompts", m.name)
	}
	job := llamaCppJob{Model: m.gguf, Threads: threads, Context: ctxLen, Decode: m.decode,
		Runs: []llamaCppRun{{Warmup: true, IDs: m.prompts[0].IDs[0]}}}
	var reps []int // each measured run's repeat
	for rep := range max(runs(m.prompts), repeats, 1) {
		for _, pr := range m.prompts {
			if rep >= cmp.Or(pr.Runs, repeats) {
				continue
			}
			job.Runs = append(job.Runs, llamaCppRun{IDs: pr.IDs[rep%len(pr.IDs)]})
			reps = append(reps, rep)
		}
	}
	in, err := json.Marshal(job)
	if err != nil {
		return err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("no node: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	cmd := exec.CommandContext(rctx, node, filepath.Join(dir, "run.mjs"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var o llamaCppOut
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return fmt.Errorf("run.mjs: %q: %w", sc.Text(), err)
		}
		run := result.Run{Prompt: o.Prompt, PrefillMs: o.PrefillMs, DecodeTokens: o.DecodeTokens, DecodeMs: o.DecodeMs}
		if i := len(e.Runs); i < len(reps) {
			run.Rep = reps[i]
		}
		e.Runs = append(e.Runs, run)
		logf("%s on llama.cpp: prompt %d: prefill %.1f ms (%.1f tok/s), decode %d in %.1f ms (%.2f tok/s)", m.name,
			run.Prompt, run.PrefillMs, run.PrefillTokS(), run.DecodeTokens, run.DecodeMs, run.DecodeTokS())
	}
	err = cmd.Wait()
	if rctx.Err() != nil && len(e.Runs) < len(reps) {
		e.Notes = append(e.Notes, fmt.Sprintf("%d of %d runs skipped: the time budget ran out", len(reps)-len(e.Runs), len(reps)))
		return nil
	}
	if err != nil {
		return fmt.Errorf("run.mjs: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
