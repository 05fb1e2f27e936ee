// Package server is the static file server of cmd wasmllm (the root
// server.go): the pages of the web folder at /, the wasm build at
// /wasmllm.wasm, and converted model folders under /models/ (with a JSON
// listing at /models/).
//
// Every response is cross-origin isolated (COOP/COEP). Content-hashed shards
// are cached forever, everything else briefly and revalidated by ETag.
// Model folders are served sandboxed (CSP sandbox), and what in them is not a
// model file is served as a download. A client can hold a connection only
// while it makes progress (see Limits), and only Limits.MaxConns at once.
//
// With Config.API it also serves the OpenAI-compatible API at /v1/, on the
// native engine or proxied to an upstream (package server/openai), under
// the same access log, limits and headers; with APIConfig.Key, /v1/ answers
// only clients that send the key (Bearer auth). Config.Check refuses to
// serve /v1/ beyond loopback without one.
package server

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

// shutdownTimeout bounds how long in-flight requests may run after a signal.
const shutdownTimeout = 10 * time.Second

// Config holds the server's settings (the command's flags).
type Config struct {
	Addr   string
	Web    string        // folder served at /
	Wasm   string        // file served at /wasmllm.wasm
	Models string        // folder whose subfolders are served at /models/NAME/
	CORS   string        // "", "*", or comma-separated origins
	MaxAge time.Duration // Cache-Control max-age of pages and manifests
	Limits Limits        // zero fields take defaultLimits' values
	API    APIConfig     // what answers /v1/, if anything

	// AllowedHosts are the Host names served besides IP addresses,
	// localhost, this machine's name and Addr's host: "name", ".domain"
	// (it and its subdomains) or "*" (any Host; see hostPolicy).
	AllowedHosts []string
}

// APIConfig says what serves the OpenAI-compatible API at /v1/ (package
// server/openai): nothing (the zero value), the native CPU engine for the
// model folders (Engine), or an upstream deployment such as vLLM
// (Upstream), never both.
type APIConfig struct {
	Engine  bool // -api
	Context int  // -api-context: each model's context in tokens (0: the model's, at most 4096)
	Queue   int  // -api-queue: requests that may wait for a busy model
	Threads int  // -api-threads: CPU threads per model (0: GOMAXPROCS)
	// KVDType is -api-kv-dtype: each model's KV cache, "f32" (the
	// default, ""), "f16" or "q8" (model.ParseKVDType).
	KVDType string
	// Embed are the text-embedding GGUFs of -api-embed, served at
	// /v1/embeddings under their file names without .gguf.
	Embed []string

	Upstream        string        // -upstream: the deployment's base URL
	UpstreamKey     string        // sent as "Authorization: Bearer KEY" (from -upstream-key-file)
	UpstreamTimeout time.Duration // -upstream-timeout (0: openai.DefaultUpstreamTimeout)

	MaxBody int64 // -max-body: a /v1/ request body's bytes (0: openai.DefaultMaxBody)

	// Key, when set, is the client key: /v1/ answers only requests with
	// "Authorization: Bearer KEY" (401 otherwise), and the client's
	// Authorization never goes further (not upstream). From -api-key-file
	// or WASMLLM_API_KEY.
	Key string
	// NoKey (-no-api-key) lets /v1/ be served without Key on an address
	// other machines reach; Check refuses that otherwise.
	NoKey bool
}

// enabled reports whether anything serves /v1/.
func (a APIConfig) enabled() bool { return a.Engine || a.Upstream != "" }

// Limits bound what one client can hold on to. The static files need no
// request body and the API's are bounded (APIConfig.MaxBody), so reading a
// request is quick; a response is only bounded by progress, so that a slow
// but live client still gets a 1 GiB shard (and a slow generation its
// stream: each write, not the whole, has WriteIdle). Deadlines are never
// moved on by a trickle of bytes: a client sending a body a byte at a time
// holds its connection for bodyTime at most.
type Limits struct {
	MaxConns       int           // connections served at once; more wait to be accepted
	MaxClientConns int           // of them from one client address (an IPv6 /64); more are refused (0: clientCap)
	ReadHeader     time.Duration // to read a request's header
	Read           time.Duration // to read a whole request, header and body (a /v1/ body: see bodyTime)
	WriteIdle      time.Duration // longest one write of a response may wait on the client
	Idle           time.Duration // a kept-alive connection between requests
}

// defaultLimits are the limits of fields left zero. MaxConns 0 is worked out
// from the file descriptors the process may open (see connCap).
var defaultLimits = Limits{
	ReadHeader: 10 * time.Second,
	Read:       30 * time.Second,
	WriteIdle:  30 * time.Second,
	Idle:       2 * time.Minute,
}

// orDefaults returns l with its zero durations set from defaultLimits.
func (l Limits) orDefaults() Limits {
	d := defaultLimits
	l.ReadHeader = cmp.Or(l.ReadHeader, d.ReadHeader)
	l.Read = cmp.Or(l.Read, d.Read)
	l.WriteIdle = cmp.Or(l.WriteIdle, d.WriteIdle)
	l.Idle = cmp.Or(l.Idle, d.Idle)
	return l
}

// minBodyRate is the slowest a /v1/ request body is waited for: 64 KiB/s
// (about 0.5 Mbit/s, a poor mobile uplink).
const minBodyRate = 64 << 10

// bodyTime is how long a /v1/ request body of n bytes (n < 0: chunked, up
// to max) may take once its header is in: ReadHeader, plus n at
// minBodyRate, within what is left of Read after the header. It is fixed
// when the header arrives, so a body trickling in a byte at a time does
// not extend it: 100 KB take 11.5 s at most with the default limits, where
// Read alone let them hold a connection for 30 s. ok is false when Read
// leaves no room beyond ReadHeader (Read alone then applies).
func (l Limits) bodyTime(n, max int64) (d time.Duration, ok bool) {
	room := l.Read - l.ReadHeader
	if room <= 0 {
		return 0, false
	}
	if n < 0 || n > max {
		n = max
	}
	n = min(n, 1<<32) // no overflow below
	return min(l.ReadHeader+time.Duration(n)*time.Second/minBodyRate, room), true
}

// Run serves cfg until ctx is done.
func Run(ctx context.Context, cfg Config, logger *log.Logger) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	h, err := newHandler(cfg, logger)
	if err != nil {
		return err
	}
	for _, p := range []struct{ what, path string }{{"-web", cfg.Web}, {"-wasm", cfg.Wasm}, {"-models", cfg.Models}} {
		if _, err := os.Stat(p.path); err != nil {
			logger.Printf("warning: %s %s: %v", p.what, p.path, err)
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	lim := cfg.Limits
	if lim.MaxConns == 0 {
		lim.MaxConns = connCap(openFileLimit())
	}
	switch {
	case cfg.API.Engine:
		logger.Printf("OpenAI-compatible API at /v1/: the native CPU engine, for the models of %s", cfg.Models)
	case cfg.API.Upstream != "":
		auth := "without a key"
		if cfg.API.UpstreamKey != "" {
			auth = "with the key of -upstream-key-file"
		}
		logger.Printf("OpenAI-compatible API at /v1/: proxied to %s (%s)", cfg.API.Upstream, auth)
	}
	if cfg.API.enabled() && cfg.API.Key != "" {
		logger.Print("/v1/ answers only clients that send the key (Authorization: Bearer)")
	}
	for _, w := range cfg.warnings() {
		logger.Print(w)
	}
	logger.Printf("serving %s, %s and models from %s on http://%s/ (at most %d connections, %d from one address)",
		cfg.Web, cfg.Wasm, cfg.Models, ln.Addr(), lim.MaxConns, lim.clientConns())
	return serve(ctx, ln, h, lim, logger)
}

// Connection cap when the open-file limit leaves room: each connection may
// hold its socket, a folder and a file open while it is served.
const (
	maxConnsDefault = 512
	fdsPerConn      = 3
	fdsReserved     = 32 // listener, log, runtime, listing
)

// connCap is the default -max-conns for an open-file limit of nofile (0:
// unknown): maxConnsDefault, or fewer so that the connections cannot use up
// the process's file descriptors.
func connCap(nofile uint64) int {
	n := uint64(maxConnsDefault)
	if nofile > 0 {
		n = min(n, (max(nofile, fdsReserved)-fdsReserved)/fdsPerConn)
	}
	return max(int(n), 4)
}

// clientCap is the default MaxClientConns: an eighth of the connections,
// but at least 16 (all of them when fewer), so that one address cannot
// take every connection, and a browser (six at once per origin, a few
// more for a download) is never refused.
func clientCap(maxConns int) int {
	return max(maxConns/8, min(maxConns, 16))
}

// clientConns is the connections one client address may hold.
func (l Limits) clientConns() int {
	if l.MaxClientConns > 0 {
		return min(l.MaxClientConns, l.MaxConns)
	}
	return clientCap(l.MaxConns)
}

// serve runs an HTTP server on ln until ctx is done, then lets in-flight
// requests finish (up to shutdownTimeout). It serves at most lim.MaxConns
// connections at once (0: no cap), lim.clientConns of them from one client
// address, and drops a client that stalls reading a request or, through
// the handler's write deadlines, taking a response.
func serve(ctx context.Context, ln net.Listener, h http.Handler, lim Limits, logger *log.Logger) error {
	lim = lim.orDefaults()
	if lim.MaxConns > 0 {
		ll := newLimitListener(ln, lim.MaxConns)
		ll.perClient = lim.clientConns()
		ll.refused = refusalLog(logger)
		ln = ll
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.ReadHeader,
		ReadTimeout:       lim.Read,
		IdleTimeout:       lim.Idle,
		ErrorLog:          logger,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Print("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	if err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Print("stopped")
	return nil
}
