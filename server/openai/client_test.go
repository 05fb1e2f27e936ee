package openai

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit"
	"wasmllm/internal/testkit/browsertest"
)

// clientDir holds the Node test of the official OpenAI client: its
// package.json and package-lock.json (the openai package, pinned) and the
// script; clientInstall is where npm ci installs it (under build/, which
// git ignores).
const (
	clientDir     = "server/openai/testdata/openai-client"
	clientInstall = "build/openai-client"
	abortTokens   = 8000
)

// TestOpenAIClient runs the official OpenAI client (npm "openai") against
// the real command, go run . -api, serving stories260K and a chat-template
// model: models, completions and chat, streamed and not, usage, the
// client's error classes, and an abort that must stop the server's
// generation (the next request does not wait behind it, and the server's
// log says the request ended early), and embeddings.create (float and
// base64) against llama.cpp's golden. It needs node and npm (testkit.Need).
func TestOpenAIClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the OpenAI client test builds the server and installs an npm package")
	}
	node, err := exec.LookPath("node")
	testkit.Need(t, err == nil, "node is not installed: the official OpenAI client (npm openai) cannot run; install Node.js and npm to run this test")
	npm, err := exec.LookPath("npm")
	testkit.Need(t, err == nil, "npm is not installed: the official OpenAI client (npm openai) cannot be installed; install npm to run this test")
	dir := installClient(t, npm)

	models := t.TempDir()
	if err := os.CopyFS(filepath.Join(models, textModel), os.DirFS(browsertest.RepoFile("models/stories260K"))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(models, chatModel), os.DirFS(chatModelDir(t))); err != nil {
		t.Fatal(err)
	}
	web := t.TempDir()
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Web: web, Wasm: filepath.Join(web, "none.wasm"), Models: models,
		Args: []string{"-api", "-api-context", strconv.Itoa(abortTokens + 192),
			"-api-embed", browsertest.RepoFile("testdata/embed/models/" + embedModel + ".gguf")}})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "client.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WASMLLM_BASE_URL="+srv.URL+"/v1", "WASMLLM_TEXT_MODEL="+textModel,
		"WASMLLM_CHAT_MODEL="+chatModel, "WASMLLM_ABORT_TOKENS="+strconv.Itoa(abortTokens),
		"WASMLLM_EMBED_MODEL="+embedModel, "WASMLLM_EMBED_GOLDEN="+browsertest.RepoFile("testdata/embed/golden/"+embedModel+".json.gz"))
	out, err := cmd.CombinedOutput()
	serverLog := strings.Join(srv.Log(), "\n")
	if err != nil {
		t.Fatalf("node --test client.test.mjs: %v\n%s\nserver log:\n%s", err, out, serverLog)
	}
	t.Logf("node --test client.test.mjs:\n%s", lastLines(string(out), 12))

	// The server saw the abort and stopped: the request's line says it
	// ended early, long before max_tokens.
	re := regexp.MustCompile(`api: chat ` + chatModel + `: (?:.*, )?(\d+) chunks streamed, finish ([^\n]*)`)
	aborted := false
	for _, m := range re.FindAllStringSubmatch(serverLog, -1) {
		if n, _ := strconv.Atoi(m[1]); strings.Contains(m[2], "abort") && n < abortTokens/2 {
			aborted = true
			t.Logf("the aborted request: %s", m[0])
		}
	}
	if !aborted {
		t.Errorf("no aborted chat request in the server's log:\n%s", serverLog)
	}
	for _, want := range []string{"GET /v1/models 200 ", "POST /v1/completions 200 ", "POST /v1/chat/completions 200 ", "POST /v1/chat/completions 404 ", "POST /v1/completions 400 ", "POST /v1/embeddings 200 ", "POST /v1/embeddings 400 "} {
		if len(srv.Requests(want)) == 0 {
			t.Errorf("no %q in the access log:\n%s", want, serverLog)
		}
	}
}

// installClient copies the client test into build/openai-client and runs
// npm ci there, unless the lock file installed last time is the same.
func installClient(t *testing.T, npm string) string {
	t.Helper()
	src, dst := browsertest.RepoFile(clientDir), browsertest.RepoFile(clientInstall)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"package.json", "package-lock.json", "client.test.mjs"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lock, _ := os.ReadFile(filepath.Join(dst, "package-lock.json"))
	installed, err := os.ReadFile(filepath.Join(dst, ".installed-lock.json"))
	if _, statErr := os.Stat(filepath.Join(dst, "node_modules", "openai", "package.json")); err == nil && statErr == nil && bytes.Equal(installed, lock) {
		return dst
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dst
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s (the openai package from the npm registry): %v\n%s", dst, err, out)
	}
	if err := os.WriteFile(filepath.Join(dst, ".installed-lock.json"), lock, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
