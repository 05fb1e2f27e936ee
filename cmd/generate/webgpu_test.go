//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"wasmllm/internal/testkit"
	"wasmllm/internal/testkit/golden"
)

// needChromium skips browser runs with -short; without Chromium it is a
// testkit.Need.
func needChromium(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the model in headless Chromium")
	}
	if b := os.Getenv("WASMEXEC_BROWSER"); b != "" {
		_, err := exec.LookPath(b)
		testkit.Need(t, err == nil, "WASMEXEC_BROWSER: %v", err)
		return
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if _, err := exec.LookPath(name); err == nil {
			return
		}
	}
	testkit.Need(t, false, "Chromium not found")
}

// runWebGPU runs the command with -backend webgpu in-process: it builds the
// GOOS=js program and wasmexec, then runs the model in headless Chromium.
func runWebGPU(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	c, err := parseFlags(append([]string{"-backend", "webgpu"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err = run(context.Background(), c, &out, &errb)
	return out.String(), errb.String(), err
}

// TestWebGPUGolden generates 16 greedy tokens on the GPU and writes the
// prompt's logits, and checks both against llama.cpp's golden file.
func TestWebGPUGolden(t *testing.T) {
	needChromium(t)
	const goldenFile = "../../testdata/golden/tiny-llama3-q4_0.golden"
	g := golden.Read(t, goldenFile)
	if g.Kind != "exact" {
		t.Fatalf("%s: kind %q", goldenFile, g.Kind)
	}
	logits := filepath.Join(t.TempDir(), "logits.json")
	out, errOut, err := runWebGPU(t, "-model", filepath.Join("../../testdata/golden", g.Model),
		"-tokens", ids(g.Tokens), "-n", "16", "-json", "-logits", logits)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errOut)
	}
	if got := jsonIDs(t, out); !slices.Equal(got, g.Greedy) {
		t.Errorf("greedy ids on WebGPU %v, golden %v", got, g.Greedy)
	}
	if !strings.Contains(errOut, `16 tokens in`) {
		t.Errorf("no summary line on stderr:\n%s", errOut)
	}
	b, err := os.ReadFile(logits)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tokens []int32     `json:"tokens"`
		Logits [][]float32 `json:"logits"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tokens, g.Tokens) || len(got.Logits) != len(g.Logits) {
		t.Fatalf("-logits wrote tokens %v and %d rows; want %v and %d", got.Tokens, len(got.Logits), g.Tokens, len(g.Logits))
	}
	worst := 0.0
	for r, want := range g.Logits {
		var maxW, maxD float64
		for i := range want {
			maxW = math.Max(maxW, math.Abs(float64(want[i])))
			maxD = math.Max(maxD, math.Abs(float64(got.Logits[r][i]-want[i])))
		}
		worst = math.Max(worst, maxD/maxW)
	}
	t.Logf("worst row error %.3g (tolerance %.3g)", worst, g.Tolerance)
	if worst > g.Tolerance {
		t.Errorf("prompt logits on WebGPU: worst row error %.3g > %.3g", worst, g.Tolerance)
	}
}

// TestWebGPUErrors: a file outside the repository is refused before anything
// is built; a missing one fails in the browser with its exit status.
func TestWebGPUErrors(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "m.gguf")
	_, _, err := runWebGPU(t, "-model", outside, "-tokens", "1", "-n", "1")
	var oe *OutsideRepoError
	if !errors.As(err, &oe) || oe.Flag != "model" || !strings.Contains(err.Error(), "copy the file under it") {
		t.Errorf("model outside the repository: %v", err)
	}
	_, _, err = runWebGPU(t, "-model", "../../testdata/models/tiny-llama3-q4_0.gguf", "-tokenizer", "/etc/hostname", "-n", "1")
	if !errors.As(err, &oe) || oe.Flag != "tokenizer" {
		t.Errorf("tokenizer outside the repository: %v", err)
	}

	needChromium(t)
	_, errOut, err := runWebGPU(t, "-model", "../../testdata/models/missing.gguf", "-tokens", "1", "-n", "1")
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(errOut, "missing.gguf") || !strings.Contains(errOut, "No such file") {
		t.Errorf("missing model: err %v, stderr:\n%s", err, errOut)
	}
}
