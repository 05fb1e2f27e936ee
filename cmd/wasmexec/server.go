package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

//go:embed page.html
var pageHTML string

//go:embed fs.js
var fsJS []byte

// pageConfig is what the page needs to start the Go program.
type pageConfig struct {
	WASM         string            `json:"wasm"`
	Argv         []string          `json:"argv"`
	Env          map[string]string `json:"env"`
	WriteBinding string            `json:"writeBinding"`
	ExitBinding  string            `json:"exitBinding"`
	// Root is the host path of the repository root ("" when there is
	// none), Cwd the program's working directory, and Writable the host
	// paths it may create and write (see fs.js).
	Root     string   `json:"root"`
	Cwd      string   `json:"cwd"`
	Writable []string `json:"writable"`
}

// server serves the page, wasm_exec.js, the wasm binary and, read-only under
// /fs/ (contents) and /fsinfo/ (metadata), the repository root; /write/
// writes the files the caller allowed.
type server struct {
	wasmPath   string
	wasmExecJS string
	root       *os.Root // nil: /fs/ answers 404
	page       []byte
	writable   []string // absolute host paths
}

func newServer(wasmPath, wasmExecJS, repoRoot string, cfg pageConfig) (*server, error) {
	js, err := json.Marshal(cfg) // escapes <, > and &, so it cannot end the script element
	if err != nil {
		return nil, err
	}
	s := &server{
		wasmPath:   wasmPath,
		wasmExecJS: wasmExecJS,
		page:       []byte(strings.Replace(pageHTML, "{{CONFIG}}", string(js), 1)),
		writable:   cfg.Writable,
	}
	if repoRoot != "" {
		if s.root, err = os.OpenRoot(repoRoot); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// listen starts serving on a random port of 127.0.0.1 and returns the base URL.
func (s *server) listen() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	stop := func() {
		srv.Close()
		if s.root != nil {
			s.root.Close()
		}
	}
	return "http://" + ln.Addr().String(), stop, nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	// Cross-origin isolated, as the engine's pages are (server/handler.go),
	// so programs can share memory with workers (cpu/ranks_js.go).
	w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
	w.Header().Set("Cross-Origin-Embedder-Policy", "require-corp")
	if idx, ok := strings.CutPrefix(r.URL.Path, "/write/"); ok && r.Method == http.MethodPost {
		s.serveWrite(w, r, idx)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "read-only", http.StatusMethodNotAllowed)
		return
	}
	switch p := r.URL.Path; {
	case p == "/" || p == "/index.html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(s.page)
	case p == "/wasm_exec.js":
		w.Header().Set("Content-Type", "text/javascript")
		http.ServeFile(w, r, s.wasmExecJS)
	case p == "/wasmexec_fs.js":
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(fsJS)
	case strings.HasPrefix(p, "/fsinfo/"):
		s.serveInfo(w, r, strings.TrimPrefix(p, "/fsinfo/"))
	case p == "/prog.wasm":
		w.Header().Set("Content-Type", "application/wasm")
		http.ServeFile(w, r, s.wasmPath)
	case strings.HasPrefix(p, "/fs/"):
		s.serveRepo(w, r, strings.TrimPrefix(p, "/fs/"))
	default:
		http.NotFound(w, r)
	}
}

// serveRepo serves one regular file below the repository root. os.Root
// refuses any path, symbolic links included, that leaves the root.
func (s *server) serveRepo(w http.ResponseWriter, r *http.Request, name string) {
	if s.root == nil || !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	f, err := s.root.Open(filepath.FromSlash(name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	ctype := "application/octet-stream"
	if strings.HasSuffix(name, ".js") { // a worker script must be served as one
		ctype = "text/javascript"
	}
	w.Header().Set("Content-Type", ctype)
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// findRepoRoot walks up from dir to the first directory holding go.mod. It
// returns "" when there is none.
func findRepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		st, err := os.Stat(filepath.Join(dir, "go.mod"))
		if err == nil && st.Mode().IsRegular() {
			return dir, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("looking for go.mod: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}
