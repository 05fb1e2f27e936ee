package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/testserver"
	"wasmllm/manifest"
)

// linkPage is what the chat page shows while it waits on a link.
type linkPage struct {
	Status, Detail, Notice, Button string
	ButtonHidden                   bool
	Picked, Badge                  string
}

const linkPageJS = `({Status: document.querySelector("[data-testid=status]").textContent,
	Detail: document.querySelector("[data-testid=status-detail]").textContent,
	Notice: document.querySelector("[data-testid=notice]").textContent,
	Button: document.querySelector("[data-testid=load]").textContent,
	ButtonHidden: document.querySelector("[data-testid=load]").hidden,
	Picked: document.getElementById("model").value,
	Badge: document.querySelector("[data-testid=backend]").textContent})`

// TestChatPageLinks: a link to the chat page only preselects what would
// spend the user's bandwidth, storage or privacy (issue 39). ?model= of a
// GGUF on another origin asks first, naming the host, and nothing is
// fetched from there until Load; ?endpoint= on another origin asks before
// anything is sent there (not even its model list), then chats with it
// once the user connects, its host on the badge (without a model, its
// models are listed when the user asks); ?model= of a listed model
// over 64 MiB waits for Load, no shard fetched. A small model of this
// origin still loads from its link at once.
func TestChatPageLinks(t *testing.T) {
	skipShort(t)
	chatPageLinks(t, func(t testing.TB) *browsertest.Browser { return browsertest.NewBrowser(t) })
}

// TestFirefoxChatPageLinks is TestChatPageLinks in Firefox.
func TestFirefoxChatPageLinks(t *testing.T) {
	skipShort(t)
	chatPageLinks(t, browsertest.NewFirefox)
}

func chatPageLinks(t *testing.T, newBrowser func(testing.TB) *browsertest.Browser) {
	// This origin's models: stories260K, and "big", whose manifest claims
	// a 128 MiB shard the server does not have.
	models := modelsDir(t)
	big := filepath.Join(models, "big")
	if err := os.CopyFS(big, os.DirFS(filepath.Join(models, "stories260K"))); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Read(big)
	if err != nil {
		t.Fatal(err)
	}
	m.Shards = append(m.Shards, manifest.Shard{File: "shard-00009-" + strings.Repeat("ab", 8) + ".bin", Bytes: 1 << 27, SHA256: strings.Repeat("ab", 32)})
	m.Tensors = append(m.Tensors, manifest.TensorInfo{Name: "huge.weight", DType: "F32", Shape: []int{2, 1 << 24}, Shard: len(m.Shards) - 1, Bytes: 1 << 27})
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(big, manifest.ManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})

	// Another origin serving a GGUF, as the hub's CDN does.
	ggufs := t.TempDir()
	gguf, err := os.ReadFile(browsertest.RepoFile("testdata/models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ggufs, "x.gguf"), gguf, 0o644); err != nil {
		t.Fatal(err)
	}
	cdn, err := testserver.Start(testserver.Options{Hub: true, Mounts: []testserver.Mount{{Prefix: "/cdn/", Path: ggufs}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cdn.Close)

	// Another origin serving an OpenAI-compatible endpoint (with CORS).
	var mu sync.Mutex
	var asked []string
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path+" "+string(body))
		mu.Unlock()
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
		switch {
		case r.Method == http.MethodOptions:
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/v1/models":
			h.Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"x","object":"model","owned_by":"them"}]}`)
		case r.URL.Path == "/v1/chat/completions":
			h.Set("Content-Type", "text/event-stream")
			for _, ev := range []string{
				`{"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
				`{"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"content":"Hello from elsewhere"},"finish_reason":null}]}`,
				`{"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
				`[DONE]`} {
				fmt.Fprintf(w, "data: %s\n\n", ev)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ep.Close)
	epHost := strings.TrimPrefix(ep.URL, "http://")
	requestsTo := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
	b := newBrowser(t)

	// waitAsk opens link and waits until the page asks.
	waitAsk := func(t *testing.T, link string) linkPage {
		t.Helper()
		b.Open(srv.URL + link)
		var page linkPage
		if err := b.WaitFor(`document.querySelector("[data-testid=status]").textContent === "no model" && `+linkPageJS, time.Minute, &page); err != nil {
			b.Run(linkPageJS, &page)
			t.Fatalf("%s: the page does not ask: %v (%+v)", link, err, page)
		}
		time.Sleep(500 * time.Millisecond) // anything the page would fetch on its own has started by now
		return page
	}

	t.Run("gguf on another origin", func(t *testing.T) {
		link := "/?backend=cpu&model=" + url.QueryEscape(cdn.URL+"/cdn/x.gguf")
		page := waitAsk(t, link)
		if !strings.Contains(page.Notice, cdn.Addr) || !strings.Contains(page.Button, cdn.Addr) || page.ButtonHidden || page.Picked != "x.gguf" {
			t.Errorf("the question does not name %s: %+v", cdn.Addr, page)
		}
		if reqs := cdn.Requests("/"); len(reqs) != 0 {
			t.Errorf("fetched from the other origin before Load: %v", reqs)
		}
		if err := b.Click("[data-testid=load]"); err != nil {
			t.Fatal(err)
		}
		waitReady(t, b)
		var name string
		b.MustRun(`wasmllmApp.info.gguf.name`, &name)
		if name != "x.gguf" || len(cdn.Requests("/cdn/x.gguf")) == 0 {
			t.Errorf("after Load: %q loaded, %d requests", name, len(cdn.Requests("/cdn/x.gguf")))
		}
	})

	t.Run("endpoint on another origin", func(t *testing.T) {
		page := waitAsk(t, "/?endpoint="+url.QueryEscape(ep.URL+"/v1")+"&model=x")
		if !strings.Contains(page.Notice, epHost) || !strings.Contains(page.Notice, "messages") || !strings.Contains(page.Button, epHost) || page.ButtonHidden {
			t.Errorf("the question does not name %s: %+v", epHost, page)
		}
		if reqs := requestsTo(); len(reqs) != 0 {
			t.Errorf("the endpoint was asked before Connect: %v", reqs)
		}
		if err := b.Click("[data-testid=load]"); err != nil {
			t.Fatal(err)
		}
		waitReady(t, b)
		b.MustRun(linkPageJS, &page)
		if !strings.Contains(page.Badge, epHost) {
			t.Errorf("the badge %q does not name %s", page.Badge, epHost)
		}
		typeMessage(t, b, "Hi there")
		if r := waitReply(t, b, 1); r.Text != "Hello from elsewhere" {
			t.Errorf("the reply %+v", r)
		}
		var sent bool
		for _, r := range requestsTo() {
			sent = sent || strings.HasPrefix(r, "POST /v1/chat/completions ") && strings.Contains(r, "Hi there")
		}
		if !sent {
			t.Errorf("the chat did not reach the endpoint: %v", requestsTo())
		}
	})

	t.Run("endpoint without a model", func(t *testing.T) {
		mu.Lock()
		asked = nil
		mu.Unlock()
		page := waitAsk(t, "/?endpoint="+url.QueryEscape(ep.URL+"/v1"))
		if !strings.Contains(page.Notice, epHost) || len(requestsTo()) != 0 {
			t.Errorf("%+v; requests to the endpoint %v", page, requestsTo())
		}
		if err := b.Click("[data-testid=list-endpoint]"); err != nil {
			t.Fatal(err)
		}
		want := "x (" + epHost + ")"
		if err := b.WaitFor(fmt.Sprintf(`[...document.getElementById("model").options].some((o) => o.value === %q)`, want), time.Minute, nil); err != nil {
			t.Errorf("the endpoint's models are not listed after the click: %v", err)
		}
	})

	t.Run("over 64 MiB", func(t *testing.T) {
		before := len(srv.Requests("/models/big/shard-"))
		page := waitAsk(t, "/?backend=cpu&model=big")
		if page.Picked != "big" || !strings.Contains(page.Button, "big") || !strings.Contains(page.Button, "MiB") || page.ButtonHidden {
			t.Errorf("%+v: want Load big with its size", page)
		}
		if n := len(srv.Requests("/models/big/shard-")) - before; n != 0 {
			t.Errorf("%d shard requests before Load", n)
		}
	})

	t.Run("small model of this origin", func(t *testing.T) {
		openPage(t, b, srv.URL+"/?backend=cpu&model=stories260K")
	})
}
