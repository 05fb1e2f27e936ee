package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/server/openai"
)

// newAPI returns the handler of /v1/ that cfg.API asks for, or nil.
func newAPI(cfg Config, h *handler) (http.Handler, error) {
	a := cfg.API
	switch {
	case a.Engine && a.Upstream != "":
		return nil, errors.New("-api and -upstream are exclusive: serve the native engine or proxy to an upstream, not both")
	case a.Engine:
		if a.Context < 0 || a.Queue < 0 || a.Threads < 0 {
			return nil, errors.New("-api-context, -api-queue and -api-threads must not be negative")
		}
		kv := loader.F32
		if a.KVDType != "" {
			var ok bool
			if kv, ok = model.ParseKVDType(a.KVDType); !ok {
				return nil, fmt.Errorf("-api-kv-dtype %q: want f32, f16 or q8", a.KVDType)
			}
		}
		embedders, err := openai.EmbedFiles(a.Embed)
		if err != nil {
			return nil, err
		}
		return openai.NewEngine(openai.EngineConfig{Models: modelFolders{h}, Context: a.Context, Threads: a.Threads, KVDType: kv,
			Queue: a.Queue, MaxBody: a.MaxBody, Logger: h.log, Embedders: embedders}), nil
	case a.Upstream != "":
		p, err := openai.NewProxy(openai.ProxyConfig{Upstream: a.Upstream, Key: a.UpstreamKey, MaxBody: a.MaxBody,
			Timeout: a.UpstreamTimeout, Logger: h.log})
		if err != nil {
			return nil, err
		}
		return p, nil
	case a.UpstreamKey != "":
		return nil, errors.New("an upstream key needs -upstream")
	}
	return nil, nil
}

// apiMethods are the methods of /v1/ (OPTIONS for CORS preflights).
const apiMethods = "GET, POST, OPTIONS"

// serveAPI answers /v1/: CORS preflights here (the API takes bodies and
// the Authorization header, which the static files' preflight refuses),
// every other request in h.api, under the same access log, write
// deadlines and cross-origin headers as the static files. With a client
// key, a request without it is answered 401 before its body is read, and
// the key goes no further than here (never upstream). A body has
// bodyTime to arrive.
func (h *handler) serveAPI(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "sandbox") // nothing here is a page
	if r.Method == http.MethodOptions {
		hd.Set("Allow", apiMethods)
		if hd.Get("Access-Control-Allow-Origin") != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			hd.Set("Access-Control-Allow-Methods", apiMethods)
			hd.Set("Access-Control-Allow-Headers", allowedHeaders(r.Header.Get("Access-Control-Request-Headers")))
			hd.Set("Access-Control-Max-Age", "600")
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if hd.Get("Access-Control-Allow-Origin") != "" {
		hd.Set("Access-Control-Expose-Headers", "Content-Length, Retry-After, X-Request-Id")
	}
	if h.apiKey != nil {
		if e := h.apiKey.check(r); e != nil {
			refuseUnauthorized(w, e)
			return
		}
		r.Header.Del("Authorization")
	}
	if !openai.CleanAPIPath(r.URL.EscapedPath()) {
		refuseBody(w)
		status, msg := http.StatusBadRequest, "bad path"
		if r.URL.Path == "/v1" {
			status, msg = http.StatusNotFound, "/v1 is the API's root: ask for /v1/models, /v1/completions or /v1/chat/completions"
		}
		openai.WriteError(w, &openai.Error{Status: status, Message: msg})
		return
	}
	if r.ContentLength != 0 {
		if d, ok := h.limits.bodyTime(r.ContentLength, h.maxBody); ok {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
	}
	h.api.ServeHTTP(w, r)
}

// allowedHeaders is the Access-Control-Allow-Headers answer to a preflight
// from an allowed origin: the headers it asks for (the OpenAI clients send
// several of their own), when they are header names, plus the API's own.
func allowedHeaders(requested string) string {
	out := []string{"Authorization", "Content-Type", "Accept", "X-Request-Id"}
	for _, f := range strings.Split(requested, ",") {
		f = strings.TrimSpace(f)
		if f == "" || len(f) > 100 || len(out) >= 64 {
			continue
		}
		ok := true
		for _, c := range f {
			if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, f)
		}
	}
	return strings.Join(out, ", ")
}

// modelFolders are the models of -models as the API serves them: the
// folders the /models/ listing shows, by the same rules (no hidden names,
// no symlinks out of the folder or to hidden names).
type modelFolders struct{ h *handler }

// Names lists the model folders whose manifest parses, in name order.
func (m modelFolders) Names() ([]string, error) {
	h := m.h
	h.listing.busy <- struct{}{}
	defer func() { <-h.listing.busy }()
	root, err := os.OpenRoot(h.models)
	if err != nil {
		if notServable(err) {
			return nil, nil
		}
		return nil, err
	}
	defer root.Close()
	ents, err := h.listModels(root)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.Error == "" {
			names = append(names, e.Name)
		}
	}
	return names, nil
}

// Dir returns the folder of the model called name, with every symlink in
// it resolved, so that loading it reads only inside the models folder.
func (m modelFolders) Dir(name string) (string, error) {
	notFound := &fs.PathError{Op: "model", Path: name, Err: fs.ErrNotExist}
	if name == "" || len(name) > 255 || strings.HasPrefix(name, ".") || strings.ContainsAny(name, "/\\\x00") {
		return "", notFound
	}
	root, err := os.OpenRoot(m.h.models)
	if err != nil {
		if notServable(err) {
			return "", notFound
		}
		return "", err
	}
	defer root.Close()
	p, err := resolve(root, name+"/"+manifest.ManifestFile)
	if err == nil {
		var fi fs.FileInfo
		if fi, err = root.Stat(p); err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("%s is not a file: %w", p, fs.ErrNotExist)
		}
	}
	if err != nil {
		if notServable(err) {
			return "", notFound
		}
		return "", err
	}
	return filepath.Join(m.h.models, filepath.FromSlash(path.Dir(p))), nil
}
