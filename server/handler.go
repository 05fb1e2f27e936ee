package server

import (
	"cmp"
	"fmt"
	"log"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"wasmllm/server/openai"
)

// handler routes requests: /wasmllm.wasm to the wasm file, /models/ to the
// model listing, /models/NAME/... into the models folder, the rest into the
// web folder.
type handler struct {
	web, models string
	wasmDir     string // the wasm file's folder and name
	wasmName    string
	corsAny     bool
	corsOrigins map[string]bool
	maxAge      time.Duration
	limits      Limits // with defaults
	hosts       hostPolicy
	listing     *listingCache
	log         *log.Logger
	api         http.Handler // /v1/, or nil
	apiKey      *clientKey   // the key /v1/ asks clients for, or nil
	maxBody     int64        // of a /v1/ request
}

func newHandler(cfg Config, logger *log.Logger) (*handler, error) {
	h := &handler{
		web:      cfg.Web,
		models:   cfg.Models,
		wasmDir:  filepath.Dir(cfg.Wasm),
		wasmName: filepath.Base(cfg.Wasm),
		maxAge:   cfg.MaxAge,
		limits:   cfg.Limits.orDefaults(),
		listing:  newListingCache(maxListedManifest),
		log:      logger,
		apiKey:   newClientKey(cfg.API.Key),
		maxBody:  cmp.Or(cfg.API.MaxBody, openai.DefaultMaxBody),
	}
	hosts, err := newHostPolicy(cfg.Addr, cfg.AllowedHosts)
	if err != nil {
		return nil, err
	}
	h.hosts = hosts
	for _, o := range strings.Split(cfg.CORS, ",") {
		switch o = strings.TrimSpace(o); {
		case o == "":
		case o == "*":
			h.corsAny = true
		case strings.HasPrefix(o, "http://") || strings.HasPrefix(o, "https://"):
			if h.corsOrigins == nil {
				h.corsOrigins = map[string]bool{}
			}
			h.corsOrigins[strings.TrimSuffix(o, "/")] = true
		default:
			return nil, fmt.Errorf("-cors: %q is not \"*\" or an origin such as https://example.com", o)
		}
	}
	api, err := newAPI(cfg, h)
	if err != nil {
		return nil, err
	}
	h.api = api
	return h, nil
}

func (h *handler) corsEnabled() bool { return h.corsAny || len(h.corsOrigins) > 0 }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lw := &logWriter{ResponseWriter: newProgressWriter(w, h.limits.WriteIdle)}
	start := time.Now()
	defer func() { h.logRequest(lw, r, time.Since(start)) }()
	h.setCommonHeaders(lw.Header(), r)
	isAPI := h.api != nil && (r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/"))
	if !h.hosts.allows(r.Host) {
		h.refuseHost(lw, r, isAPI)
		return
	}
	if isAPI {
		h.serveAPI(lw, r)
		return
	}
	if r.ContentLength != 0 { // a body (-1: chunked): 405 or 413 below
		refuseBody(w)
	}

	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		h.options(lw, r)
		return
	default:
		lw.Header().Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(lw, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength != 0 {
		http.Error(lw, "413 this server takes no request bodies", http.StatusRequestEntityTooLarge)
		return
	}
	rel, ok := cleanPath(r)
	if !ok {
		http.Error(lw, "400 bad path", http.StatusBadRequest)
		return
	}
	if rel == "models" || strings.HasPrefix(rel, "models/") {
		// Nothing in a model folder is a page: no script of its runs on
		// this origin, even when opened directly.
		lw.Header().Set("Content-Security-Policy", "sandbox")
	}
	switch {
	case rel == "wasmllm.wasm":
		h.serveFile(lw, r, h.wasmDir, h.wasmName, fileWasm)
	case rel == "models" || rel == "models/":
		h.serveListing(lw, r)
	case strings.HasPrefix(rel, "models/"):
		h.serveFile(lw, r, h.models, strings.TrimPrefix(rel, "models/"), fileModel)
	default:
		h.serveFile(lw, r, h.web, rel, filePage)
	}
}

// refuseHost answers a request whose Host is not served (see hostPolicy):
// 403, in the API's shape on /v1/, naming the flag that would allow it.
func (h *handler) refuseHost(w http.ResponseWriter, r *http.Request, api bool) {
	refuseBody(w)
	msg := fmt.Sprintf("this server does not answer for the host %q: its name is not in -allowed-hosts", clipName(r.Host))
	if api {
		openai.WriteError(w, &openai.Error{Status: http.StatusForbidden, Message: msg})
		return
	}
	http.Error(w, "403 "+msg, http.StatusForbidden)
}

// refuseBody makes sure a request body is never waited for: this server
// takes none, so the connection is closed after the answer, and the read
// deadline is moved to now so that net/http, which reads what is left of a
// body after the handler, does not wait on a client that never sends it.
func refuseBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// setCommonHeaders sets the headers every response carries: cross-origin
// isolation, and CORS when enabled. Other origins may embed a response
// (CORP cross-origin) only when CORS lets them read it: with -cors *, or
// when the request comes from a listed origin.
func (h *handler) setCommonHeaders(hd http.Header, r *http.Request) {
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Embedder-Policy", "require-corp")
	hd.Set("X-Content-Type-Options", "nosniff")
	origin := r.Header.Get("Origin")
	allowed := h.corsAny || (origin != "" && h.corsOrigins[origin])
	if allowed {
		hd.Set("Cross-Origin-Resource-Policy", "cross-origin")
	} else {
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	}
	if !h.corsEnabled() {
		return
	}
	switch {
	case h.corsAny:
		hd.Set("Access-Control-Allow-Origin", "*")
	case allowed:
		hd.Set("Access-Control-Allow-Origin", origin)
	}
	if !h.corsAny {
		// The CORS and CORP headers depend on Origin.
		hd.Add("Vary", "Origin")
	}
	if hd.Get("Access-Control-Allow-Origin") != "" {
		hd.Set("Access-Control-Expose-Headers", "Content-Length, Content-Range, Content-Encoding, Accept-Ranges, ETag, Last-Modified")
	}
}

// options answers OPTIONS, including CORS preflights when CORS is enabled.
func (h *handler) options(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Allow", "GET, HEAD, OPTIONS")
	if hd.Get("Access-Control-Allow-Origin") != "" && r.Header.Get("Access-Control-Request-Method") != "" {
		hd.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		hd.Set("Access-Control-Allow-Headers", "Range, If-Range, If-None-Match, If-Modified-Since, Cache-Control")
		hd.Set("Access-Control-Max-Age", "600")
	}
	w.WriteHeader(http.StatusNoContent)
}

// cleanPath returns the request path relative to the site root, without the
// leading slash (a trailing slash is kept). It rejects encoded slashes,
// backslashes and NULs, "." and ".." segments, and empty segments.
func cleanPath(r *http.Request) (string, bool) {
	raw := strings.ToLower(r.URL.EscapedPath())
	if strings.Contains(raw, "%2f") || strings.Contains(raw, "%5c") || strings.Contains(raw, "%00") {
		return "", false
	}
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return "", false
	}
	rel := p[1:]
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		switch {
		case s == "." || s == "..":
			return "", false
		case s == "" && i != len(segs)-1:
			return "", false
		}
	}
	return rel, true
}
