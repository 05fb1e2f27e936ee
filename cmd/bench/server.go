package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// server serves the bench's page and everything it loads, on 127.0.0.1,
// cross-origin isolated (wllama's threads need SharedArrayBuffer) and
// uncached (a "network" load must come from the network):
//
//	/             bench/ (index.html, bench.js)
//	/probe.wasm   the probe (cmd/bench/probe, GOOS=js)
//	/wasm_exec.js the toolchain's
//	/web/         web/ with wasm_exec.js and the engine's wasmllm.wasm
//	/wllama/      bench/node_modules/@wllama/wllama/esm/
//	/models/      the bench's model folders and GGUF files
type server struct {
	URL string
	srv *http.Server
}

// serverFiles are the paths the server maps.
type serverFiles struct {
	Page, Web, Wllama, Models  string // folders
	Probe, EngineWasm, WasmExe string // files
}

func startServer(f serverFiles) (*server, error) {
	mux := http.NewServeMux()
	file := func(path string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, path) })
	}
	dir := func(prefix, root string) {
		mux.Handle(prefix, http.StripPrefix(strings.TrimSuffix(prefix, "/"), http.FileServer(noList{http.Dir(root)})))
	}
	mux.Handle("/probe.wasm", file(f.Probe))
	mux.Handle("/wasm_exec.js", file(f.WasmExe))
	mux.Handle("/web/wasm_exec.js", file(f.WasmExe))
	mux.Handle("/web/wasmllm.wasm", file(f.EngineWasm))
	dir("/web/", f.Web)
	dir("/models/", f.Models)
	if f.Wllama != "" {
		dir("/wllama/", f.Wllama)
	}
	dir("/", f.Page)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &server{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: isolate(mux), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("server: %v", err)
		}
	}()
	return s, nil
}

func (s *server) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
}

// isolate adds the cross-origin isolation headers and turns off caching.
func isolate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Embedder-Policy", "require-corp")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		switch filepath.Ext(r.URL.Path) {
		case ".wasm":
			hd.Set("Content-Type", "application/wasm")
		case ".js", ".mjs":
			hd.Set("Content-Type", "text/javascript; charset=utf-8")
		}
		h.ServeHTTP(w, r)
	})
}

// noList serves files but no directory listings.
type noList struct{ fs http.FileSystem }

func (n noList) Open(name string) (http.File, error) {
	f, err := n.fs.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		if idx, err := n.fs.Open(strings.TrimSuffix(name, "/") + "/index.html"); err == nil {
			idx.Close()
			return f, nil
		}
		f.Close()
		return nil, os.ErrNotExist
	}
	return f, nil
}
