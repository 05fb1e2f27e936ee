package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/source"
	"wasmllm/tokenizer"
)

// replyTimeout bounds one reply on this slow, shared machine.
const replyTimeout = 3 * time.Minute

var generateBuild struct {
	once sync.Once
	path string
	err  error
}

// generateBinary builds cmd/generate once per test binary (go run would
// build it again for every call).
func generateBinary(t *testing.T) string {
	t.Helper()
	generateBuild.once.Do(func() {
		dir := browsertest.RepoFile(browsertest.BuildDir)
		if generateBuild.err = os.MkdirAll(dir, 0o755); generateBuild.err != nil {
			return
		}
		p := filepath.Join(dir, fmt.Sprintf("generate-e2e-%d", os.Getpid()))
		cmd := exec.Command("go", "build", "-o", p, "./cmd/generate")
		cmd.Dir = browsertest.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			generateBuild.err = fmt.Errorf("go build ./cmd/generate: %v\n%s", err, out)
			return
		}
		generateBuild.path = p
	})
	if generateBuild.err != nil {
		t.Fatal(generateBuild.err)
	}
	return generateBuild.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if generateBuild.path != "" {
		os.Remove(generateBuild.path)
	}
	os.Exit(code)
}

// generated is cmd/generate's output: the text and the token ids.
type generated struct {
	Text string
	IDs  []int32
}

// generate runs cmd/generate -json with args (what `go run ./cmd/generate`
// runs, built once).
func generate(t *testing.T, args ...string) generated {
	t.Helper()
	cmd := exec.Command(generateBinary(t), append([]string{"-json"}, args...)...)
	cmd.Dir = browsertest.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("generate %q: %v\n%s", args, err, stderr.Bytes())
	}
	var g generated
	var text strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var tok struct {
			ID   int32  `json:"id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &tok); err != nil {
			t.Fatalf("generate output %q: %v", sc.Text(), err)
		}
		text.WriteString(tok.Text)
		g.IDs = append(g.IDs, tok.ID)
	}
	g.Text = text.String()
	return g
}

// settings are the page's sampling settings, as the page's inputs hold
// them, and the matching cmd/generate flags.
type settings struct {
	Temperature, TopP, MinP, RepetitionPenalty, FrequencyPenalty, PresencePenalty float64
	TopK, MaxTokens, Seed                                                         int
}

func (s settings) flags() []string {
	f := func(v float64) string { return fmt.Sprint(v) }
	return []string{
		"-temperature", f(s.Temperature), "-top-p", f(s.TopP), "-top-k", fmt.Sprint(s.TopK), "-min-p", f(s.MinP),
		"-repetition-penalty", f(s.RepetitionPenalty), "-frequency-penalty", f(s.FrequencyPenalty),
		"-presence-penalty", f(s.PresencePenalty), "-seed", fmt.Sprint(s.Seed), "-n", fmt.Sprint(s.MaxTokens),
	}
}

// apply sets the page's settings inputs (in the light DOM of index.html).
func (s settings) apply(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	vals := map[string]any{
		"temperature": s.Temperature, "top_p": s.TopP, "top_k": s.TopK, "min_p": s.MinP,
		"repetition_penalty": s.RepetitionPenalty, "frequency_penalty": s.FrequencyPenalty,
		"presence_penalty": s.PresencePenalty, "max_tokens": s.MaxTokens, "seed": s.Seed,
	}
	b.MustRun(`((vals) => { for (const [k, v] of Object.entries(vals)) {
		const e = document.getElementById(k); e.value = String(v); e.dispatchEvent(new Event("input", {bubbles: true})); } })(`+js(vals)+`)`, nil)
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// reply is one entry of window.wasmllmApp.history.
type reply struct {
	Text         string `json:"text"`
	FinishReason string `json:"finish_reason"`
	Chunks       int    `json:"chunks"`
	ChunksAtStop *int   `json:"chunks_at_stop"`
	Usage        struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Timings struct {
		PrefillTokens    int     `json:"prefill_tokens"`
		PrefillPerSecond float64 `json:"prefill_tokens_per_s"`
		DecodeTokens     int     `json:"decode_tokens"`
		DecodePerSecond  float64 `json:"decode_tokens_per_s"`
	} `json:"timings"`
	Error *struct {
		Code, Message string
	} `json:"error"`
}

// skipShort skips a browser test under go test -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a browser test (-short)")
	}
}

// openPage opens the chat page and waits until its status is "ready".
func openPage(t *testing.T, b *browsertest.Browser, url string) {
	t.Helper()
	b.Open(url)
	waitReady(t, b)
}

func waitReady(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	if err := b.WaitFor(`document.querySelector("[data-testid=status]").textContent === "ready"`, 3*time.Minute, nil); err != nil {
		var status string
		b.Run(`document.querySelector("[data-testid=status]").textContent + document.querySelector("[data-testid=status-detail]").textContent`, &status)
		t.Fatalf("%v (status %q)", err, status)
	}
}

// typeMessage focuses the prompt and types text with real key events, then
// presses Enter (which sends).
func typeMessage(t *testing.T, b *browsertest.Browser, text string) {
	t.Helper()
	b.MustRun(`document.querySelector("[data-testid=prompt]").focus()`, nil)
	if err := b.Keys(text + kb.Enter); err != nil {
		t.Fatal(err)
	}
	var left string
	b.MustRun(`document.querySelector("[data-testid=prompt]").value`, &left)
	if left != "" {
		t.Fatalf("after Enter the prompt still holds %q", left)
	}
}

// waitReply waits for the n-th finished reply (1-based) and returns it.
func waitReply(t *testing.T, b *browsertest.Browser, n int) reply {
	t.Helper()
	var r reply
	if err := b.WaitFor(fmt.Sprintf(`wasmllmApp.history.length >= %d && wasmllmApp.history[%d]`, n, n-1), replyTimeout, &r); err != nil {
		t.Fatal(err)
	}
	if r.Error != nil {
		t.Fatalf("reply %d failed: %s: %s", n, r.Error.Code, r.Error.Message)
	}
	return r
}

// modelsDir returns a fresh models folder holding a copy of the bundled
// stories260K (the server serves it at /models/stories260K/).
func modelsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := browsertest.RepoFile("models/stories260K")
	dst := filepath.Join(dir, "stories260K")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// promptIDs returns the ids the engine prefills for a text prompt.
func promptIDs(t *testing.T, modelDir, prompt string) []int32 {
	t.Helper()
	ids, err := loadTokenizer(t, modelDir).Encode(prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// chatIDs returns the ids the engine prefills for a chat.
func chatIDs(t *testing.T, modelDir string, msgs []tokenizer.Message, kwargs map[string]any) []int32 {
	t.Helper()
	tok := loadTokenizer(t, modelDir)
	kw := map[string]any{}
	for k, v := range kwargs {
		kw[k] = v
	}
	text, err := tok.RenderChat(msgs, tokenizer.ChatOptions{AddGenerationPrompt: true, Kwargs: kw})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode(text, false)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func loadTokenizer(t *testing.T, modelDir string) *tokenizer.Tokenizer {
	t.Helper()
	_, tok, err := source.Load(modelDir, "")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// expectedCached is what a request for next may reuse after a request
// that prefilled prev and generated gen: the engine's cache holds prev and
// every generated token but the last (which was never run), and the last
// prompt token always runs again for its logits.
func expectedCached(prev, gen, next []int32) int {
	cache := append(append([]int32{}, prev...), gen[:max(0, len(gen)-1)]...)
	n := 0
	for n < len(cache) && n < len(next) && cache[n] == next[n] {
		n++
	}
	if n == len(next) {
		n--
	}
	return n
}

// screenshot saves a PNG of the page to build/screenshots/name.
func screenshot(t *testing.T, b *browsertest.Browser, name string) string {
	t.Helper()
	dir := browsertest.RepoFile("build/screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := b.Screenshot(p); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	return p
}
