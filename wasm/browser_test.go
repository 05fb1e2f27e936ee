//go:build !js

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"wasmllm/internal/browsertest"
	"wasmllm/manifest"
)

// These tests run the browser engine end to end: the real server on
// 127.0.0.1 (or a fault-injecting one), the wasm engine in a Web Worker of
// headless Chromium, and the JavaScript API in web/. They use the CPU
// backend until the WebGPU kernels are complete.

var modelsOnce sync.Once

// storiesModel converts stories260K into a models folder (two shards of at
// most 1 MiB) and returns the folder and its manifest.
func storiesModel(t *testing.T) (string, *manifest.Manifest) {
	t.Helper()
	models := t.TempDir()
	m := browsertest.Convert(t, browsertest.RepoFile("testdata/models/stories260K.gguf"), filepath.Join(models, "stories"),
		browsertest.ConvertOptions{ShardMB: 1})
	if len(m.Shards) < 2 {
		t.Fatalf("want a model of several shards, got %d", len(m.Shards))
	}
	return models, m
}

// generateCLI runs cmd/generate -json and returns the concatenated text and
// the token ids.
func generateCLI(t *testing.T, args ...string) (string, []int32) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", "./cmd/generate", "-json"}, args...)...)
	cmd.Dir = browsertest.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./cmd/generate %v: %v\n%s", args, err, stderr.Bytes())
	}
	var text strings.Builder
	var ids []int32
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var tok struct {
			ID   int32  `json:"id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &tok); err != nil {
			t.Fatalf("generate output %q: %v", sc.Text(), err)
		}
		text.WriteString(tok.Text)
		ids = append(ids, tok.ID)
	}
	return text.String(), ids
}

func jsString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

type completion struct {
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// TestLoadGenerate loads the converted model in the browser and generates
// what cmd/generate generates for the same model, prompt and settings.
func TestLoadGenerate(t *testing.T) {
	models, m := storiesModel(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	var info map[string]any
	b.MustRun(`wasmllm.createEngine({model: "/models/stories/", backend: "cpu", onProgress}).then(e => (window.engine = e).info)`, &info)
	if info["backend"] != "cpu" || info["model"].(map[string]any)["name"] != "stories" {
		t.Errorf("info %v", info)
	}
	t.Logf("info: %v", info)
	settings := []string{"-prompt", "Once upon a time", "-n", "40", "-temperature", "0.8", "-top-k", "40", "-seed", "7"}
	want, _ := generateCLI(t, append([]string{"-model", filepath.Join(models, "stories")}, settings...)...)
	var res completion
	b.MustRun(`engine.completions.create({prompt: "Once upon a time", max_tokens: 40, temperature: 0.8, top_k: 40, seed: 7})`, &res)
	if got := res.Choices[0].Text; got != want {
		t.Errorf("browser: %q\ngenerate: %q", got, want)
	}
	_ = m
	_ = strconv.Itoa
	_ = fmt.Sprint
}
