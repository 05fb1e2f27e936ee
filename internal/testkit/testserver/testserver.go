// Package testserver is the one in-process file server that tests and the
// bench serve pages, wasm and model folders from: cross-origin isolated
// (COOP/COEP/CORP same-origin, so SharedArrayBuffer works), uncached or
// revalidated, with Range requests (http.ServeContent), an access log, and
// injected faults for the loader's tests: a connection cut part-way through
// a file, a faulty prefix refused as if the server were down, or its
// bodies slowed to a rate. The real server is package server; this one
// only maps paths to files.
package testserver

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mount maps a URL path to a file, or, with a trailing slash on Prefix, a
// URL folder to a folder on disk.
type Mount struct {
	Prefix string // "/wasmllm.wasm" or "/models/"
	Path   string
}

// Options configure Start.
type Options struct {
	// Addr is host:port; "" picks a free port on 127.0.0.1. A busy address
	// is retried for a few seconds (a restarted server's port may still be
	// in TIME_WAIT).
	Addr   string
	Mounts []Mount
	// NoStore sends Cache-Control: no-store (every load from the network);
	// otherwise no-cache (revalidated).
	NoStore bool
	// Faulty is the URL prefix that SetOffline and SetRate act on
	// (default "/models/").
	Faulty string
	// Hub makes the server answer as the Hugging Face hub and its CDN do
	// for a model file: CORS for any origin (Range allowed; Content-Range,
	// Content-Length and ETag exposed; preflights answered), and an ETag
	// on every file.
	Hub bool
	// Redirect sends each request under a key (a URL path prefix) to the
	// value (a URL prefix, on another origin) plus the rest of the path,
	// with a 302, as the hub's resolve/ links go to its CDN.
	Redirect map[string]string
	// Before, when set, runs before each request is served: a test
	// changes a file part-way through a load with it.
	Before func(r *http.Request)
	// ETag, when set, gives a Hub file's ETag ("" for none) in place of
	// one made of its size and modification time.
	ETag func(r *http.Request, fi os.FileInfo) string
}

// Request is one line of the access log.
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

// Server is a running test server.
type Server struct {
	URL  string // http://ADDR
	Addr string

	o       Options
	srv     *http.Server
	mu      sync.Mutex
	log     []Request
	cuts    map[string]int64
	offline bool
	rate    int64 // bytes per second of faulty bodies; 0: unlimited
}

// Start serves o until Close.
func Start(o Options) (*Server, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Faulty == "" {
		o.Faulty = "/models/"
	}
	// Longest prefixes first, so that a file mount wins over its folder.
	o.Mounts = append([]Mount(nil), o.Mounts...)
	sort.SliceStable(o.Mounts, func(i, j int) bool { return len(o.Mounts[i].Prefix) > len(o.Mounts[j].Prefix) })
	var ln net.Listener
	var err error
	for try := 0; try < 50; try++ {
		if ln, err = net.Listen("tcp", o.Addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, cuts: map[string]int64{}, Addr: ln.Addr().String()}
	s.URL = "http://" + s.Addr
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server and closes its connections.
func (s *Server) Close() { s.srv.Close() }

// CutOnce makes the next plain GET (without Range) of urlPath send only
// after bytes of the body, then drop the connection.
func (s *Server) CutOnce(urlPath string, after int64) {
	s.mu.Lock()
	s.cuts[urlPath] = after
	s.mu.Unlock()
}

// SetOffline makes every request under the faulty prefix fail as a dropped
// connection.
func (s *Server) SetOffline(off bool) {
	s.mu.Lock()
	s.offline = off
	s.mu.Unlock()
}

// SetRate limits the bodies under the faulty prefix to bytesPerSecond (0:
// no limit), so that a load lasts long enough to watch.
func (s *Server) SetRate(bytesPerSecond int64) {
	s.mu.Lock()
	s.rate = bytesPerSecond
	s.mu.Unlock()
}

// Requests returns the logged requests whose path starts with prefix.
func (s *Server) Requests(prefix string) []Request {
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

// file is the file urlPath maps to, or "".
func (s *Server) file(p string) string {
	for _, m := range s.o.Mounts {
		switch {
		case strings.HasSuffix(m.Prefix, "/") && strings.HasPrefix(p+"/", m.Prefix):
			rest := strings.TrimPrefix(strings.TrimPrefix(p, strings.TrimSuffix(m.Prefix, "/")), "/")
			return filepath.Join(m.Path, filepath.FromSlash(rest))
		case p == m.Prefix:
			return m.Path
		}
	}
	return ""
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Embedder-Policy", "require-corp")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if s.o.Hub {
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", "Content-Range, Content-Length, ETag, Accept-Ranges")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Headers", "Range")
			h.Set("Access-Control-Allow-Methods", "GET, HEAD")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if s.o.NoStore {
		h.Set("Cache-Control", "no-store")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	p := path.Clean(r.URL.Path)
	faulty := strings.HasPrefix(p+"/", s.o.Faulty)
	rec := Request{Method: r.Method, Path: r.URL.Path, Range: r.Header.Get("Range")}
	cw := &countingWriter{ResponseWriter: w, limit: -1}
	s.mu.Lock()
	offline := s.offline && faulty
	if faulty {
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
		if cw.cut || offline {
			panic(http.ErrAbortHandler) // drop the connection mid-response
		}
	}()
	if offline {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	}
	if s.o.Before != nil {
		s.o.Before(r)
	}
	for from, to := range s.o.Redirect {
		if strings.HasPrefix(r.URL.Path, from) {
			http.Redirect(cw, r, to+strings.TrimPrefix(r.URL.Path, from), http.StatusFound)
			return
		}
	}
	name := s.file(p)
	f, fi := open(name)
	if f != nil && fi.IsDir() { // a folder serves its index.html
		f.Close()
		name = filepath.Join(name, "index.html")
		f, fi = open(name)
	}
	if f == nil || fi.IsDir() {
		if f != nil {
			f.Close()
		}
		http.Error(cw, "404 not found", http.StatusNotFound)
		return
	}
	defer f.Close()
	switch path.Ext(p) { // by the URL, as a real server types what it serves
	case ".wasm":
		h.Set("Content-Type", "application/wasm")
	case ".js", ".mjs":
		h.Set("Content-Type", "text/javascript; charset=utf-8")
	}
	if s.o.Hub {
		etag := fmt.Sprintf(`"%x-%x"`, fi.Size(), fi.ModTime().UnixNano())
		if s.o.ETag != nil {
			etag = s.o.ETag(r, fi)
		}
		if etag != "" {
			h.Set("ETag", etag)
		}
	}
	http.ServeContent(cw, r, fi.Name(), fi.ModTime(), struct{ io.ReadSeeker }{f})
}

// open opens name, or returns nils.
func open(name string) (*os.File, os.FileInfo) {
	if name == "" {
		return nil, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil
	}
	return f, fi
}

// countingWriter counts the body bytes, and cuts or slows them.
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

var errCut = fmt.Errorf("testserver: connection cut on purpose")
