package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wasmllm/engine"
	"wasmllm/internal/testkit/browsertest"
	"wasmllm/sampler"
)

// The models of the tests: the bundled stories260K (no chat template) and
// tiny-qwen3 (random weights) converted with the Qwen3 chat template.
const (
	textModel = "stories260K"
	chatModel = "qwen"
)

var chatBuild struct {
	once sync.Once
	dir  string // holds chatModel/
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if chatBuild.dir != "" {
		os.RemoveAll(chatBuild.dir)
	}
	os.Exit(code)
}

// chatModelDir converts the chat model once per test binary and returns
// its folder.
func chatModelDir(t *testing.T) string {
	t.Helper()
	chatBuild.once.Do(func() {
		if chatBuild.dir, chatBuild.err = os.MkdirTemp("", "wasmllm-openai-"); chatBuild.err != nil {
			return
		}
		// Convert and ChatTokenizer fail t; run them in a test of their own
		// so that a failure is reported once, with its reason.
		ok := t.Run("convert", func(t *testing.T) {
			browsertest.Convert(t, browsertest.RepoFile("testdata/hf/tiny-qwen3"), filepath.Join(chatBuild.dir, chatModel),
				browsertest.ConvertOptions{Tokenizer: browsertest.ChatTokenizer(t, "tiny-qwen3")})
		})
		if !ok {
			chatBuild.err = os.ErrInvalid
		}
	})
	if chatBuild.err != nil {
		t.Fatalf("converting the chat model: %v", chatBuild.err)
	}
	return filepath.Join(chatBuild.dir, chatModel)
}

// dirModels serves the named folders.
type dirModels map[string]string

func (m dirModels) Names() ([]string, error) {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

func (m dirModels) Dir(name string) (string, error) {
	if d, ok := m[name]; ok {
		return d, nil
	}
	return "", &fs.PathError{Op: "model", Path: name, Err: fs.ErrNotExist}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// slowFrom marks the requests the test engines slow down: those asking for
// at least this many tokens take slowDelay per token.
const (
	slowFrom  = 50
	slowDelay = 10 * time.Millisecond
)

// slowProcessor sleeps before every token and counts them.
type slowProcessor struct {
	delay time.Duration
	calls *int64counter
}

type int64counter struct {
	mu sync.Mutex
	n  int
}

func (c *int64counter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *int64counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (p slowProcessor) Process(logits []float32, output []int32) error {
	p.calls.add()
	time.Sleep(p.delay)
	return nil
}

// testEngine is an Engine serving the models in an httptest server.
type testEngine struct {
	*Engine
	srv   *httptest.Server
	log   *syncBuffer
	slow  *int64counter // tokens the slow requests generated
	loads *int64counter
}

// newTestEngine serves models (with the chat model when chat is set).
// Requests for slowFrom tokens or more are slowed down.
func newTestEngine(t *testing.T, cfg EngineConfig, chat bool, configure ...func(*http.Server)) *testEngine {
	t.Helper()
	models := dirModels{textModel: browsertest.RepoFile("models/stories260K")}
	if chat {
		models[chatModel] = chatModelDir(t)
	}
	if cfg.Models == nil {
		cfg.Models = models
	}
	te := &testEngine{log: &syncBuffer{}, slow: &int64counter{}, loads: &int64counter{}}
	cfg.Logger = log.New(te.log, "", 0)
	te.Engine = NewEngine(cfg)
	load := te.Engine.load
	te.Engine.load = func(dir string) (*engine.Engine, error) {
		te.loads.add()
		return load(dir)
	}
	te.Engine.params = func(p *sampler.Params) {
		if p.MaxTokens >= slowFrom {
			p.Processors = append(p.Processors, slowProcessor{delay: slowDelay, calls: te.slow})
		}
	}
	te.srv = httptest.NewUnstartedServer(te.Engine)
	for _, c := range configure {
		c(te.srv.Config)
	}
	te.srv.Start()
	t.Cleanup(te.srv.Close)
	return te
}

// post sends a JSON body to path.
func (te *testEngine) post(t *testing.T, path string, body any) *http.Response {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(te.srv.URL+path, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// decode reads a JSON response of the given status into v.
func decode(t *testing.T, resp *http.Response, status int, v any) {
	t.Helper()
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, data)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}

// events reads a Server-Sent Events body: the data of each event, up to
// and without [DONE], which must end it.
func events(t *testing.T, resp *http.Response) []string {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if done {
			t.Fatalf("data after [DONE]: %q", line)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not a data line: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		out = append(out, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !done {
		t.Fatalf("the stream did not end with [DONE]; events: %q", out)
	}
	return out
}
