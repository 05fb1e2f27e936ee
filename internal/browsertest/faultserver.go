package browsertest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one line of a FaultServer's access log.
type Request struct {
	Method, Path string
	Range        string // the Range header, "" for none
	Status       int
	Bytes        int64 // body bytes written
	Cut          bool  // the connection was cut on purpose
}

func (r Request) String() string {
	return fmt.Sprintf("%s %s %d %d range=%q cut=%v", r.Method, r.Path, r.Status, r.Bytes, r.Range, r.Cut)
}

// FaultServer is an in-process file server laid out like the real one (web
// at /, the wasm at /wasmllm.wasm, model folders under /models/), with
// cross-origin isolation headers, Range requests (http.ServeContent), an
// access log, and injected faults: a connection cut part-way through a
// file, or every /models/ request refused as if the server were down.
type FaultServer struct {
	URL  string
	Addr string

	web, wasm, models string
	srv               *http.Server
	mu                sync.Mutex
	log               []Request
	cuts              map[string]int64
	offline           bool
	rate              int64 // bytes per second of /models/ bodies; 0: unlimited
}

// NewFaultServer serves web, wasm and models on addr ("" for a free port
// on 127.0.0.1) until the test ends.
func NewFaultServer(t testing.TB, web, wasm, models, addr string) *FaultServer {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	var err error
	for try := 0; try < 50; try++ {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := &FaultServer{web: web, wasm: wasm, models: models, cuts: map[string]int64{}, Addr: ln.Addr().String()}
	s.URL = "http://" + s.Addr
	s.srv = &http.Server{Handler: s, ErrorLog: nil}
	go s.srv.Serve(ln)
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and closes its connections.
func (s *FaultServer) Close() { s.srv.Close() }

// CutOnce makes the next plain GET (without Range) of urlPath send only
// after bytes of the body, then drop the connection.
func (s *FaultServer) CutOnce(urlPath string, after int64) {
	s.mu.Lock()
	s.cuts[urlPath] = after
	s.mu.Unlock()
}

// SetOffline makes every /models/ request fail as a dropped connection.
func (s *FaultServer) SetOffline(off bool) {
	s.mu.Lock()
	s.offline = off
	s.mu.Unlock()
}

// SetRate limits /models/ response bodies to bytesPerSecond (0: no limit),
// so that a load lasts long enough to watch.
func (s *FaultServer) SetRate(bytesPerSecond int64) {
	s.mu.Lock()
	s.rate = bytesPerSecond
	s.mu.Unlock()
}

// Requests returns the logged requests whose path starts with prefix.
func (s *FaultServer) Requests(prefix string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.log {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
	limit  int64 // cut after this many body bytes; -1 for never
	cut    bool
	rate   int64 // bytes per second; 0: unlimited
}

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.rate > 0 {
		// Write in pieces of a tenth of a second each.
		piece := max(int(w.rate/10), 1)
		total := 0
		for len(p) > 0 {
			n := min(piece, len(p))
			k, err := w.write(p[:n])
			total += k
			if err != nil {
				return total, err
			}
			http.NewResponseController(w.ResponseWriter).Flush()
			time.Sleep(time.Duration(int64(n) * int64(time.Second) / w.rate))
			p = p[n:]
		}
		return total, nil
	}
	return w.write(p)
}

func (w *countingWriter) write(p []byte) (int, error) {
	if w.limit >= 0 && w.n+int64(len(p)) > w.limit {
		p = p[:w.limit-w.n]
		w.ResponseWriter.Write(p)
		w.n += int64(len(p))
		w.cut = true
		http.NewResponseController(w.ResponseWriter).Flush()
		// A connection that drops after a while: the client has read what
		// came before (Chromium may discard data still in flight when a
		// connection closes at once).
		time.Sleep(500 * time.Millisecond)
		return len(p), errCut
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

var errCut = fmt.Errorf("browsertest: connection cut on purpose")

func (s *FaultServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Embedder-Policy", "require-corp")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-cache")
	p := path.Clean(r.URL.Path)
	rec := Request{Method: r.Method, Path: r.URL.Path, Range: r.Header.Get("Range")}
	cw := &countingWriter{ResponseWriter: w, limit: -1}
	s.mu.Lock()
	offline := s.offline
	if strings.HasPrefix(p, "/models/") {
		cw.rate = s.rate
	}
	if after, ok := s.cuts[r.URL.Path]; ok && rec.Range == "" {
		cw.limit = after
		delete(s.cuts, r.URL.Path)
	}
	s.mu.Unlock()
	defer func() {
		rec.Status, rec.Bytes, rec.Cut = cw.status, cw.n, cw.cut
		s.mu.Lock()
		s.log = append(s.log, rec)
		s.mu.Unlock()
		if cw.cut || (offline && strings.HasPrefix(p, "/models/")) {
			panic(http.ErrAbortHandler) // drop the connection mid-response
		}
	}()
	var file string
	switch {
	case offline && strings.HasPrefix(p, "/models/"):
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	case p == "/wasmllm.wasm":
		file = s.wasm
		h.Set("Content-Type", "application/wasm")
	case strings.HasPrefix(p, "/models/"):
		file = filepath.Join(s.models, filepath.FromSlash(strings.TrimPrefix(p, "/models/")))
	default:
		file = filepath.Join(s.web, filepath.FromSlash(strings.TrimPrefix(p, "/")))
	}
	f, err := os.Open(file)
	if err != nil {
		http.Error(cw, "404 not found", http.StatusNotFound)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.IsDir() {
		http.Error(cw, "404 not found", http.StatusNotFound)
		return
	}
	if strings.HasSuffix(file, ".js") {
		h.Set("Content-Type", "text/javascript; charset=utf-8")
	}
	http.ServeContent(cw, r, fi.Name(), fi.ModTime(), struct{ io.ReadSeeker }{f})
}
