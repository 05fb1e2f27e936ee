package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ProxyConfig configures a Proxy.
type ProxyConfig struct {
	// Upstream is the deployment's base URL, such as http://gpu-box:8000 or
	// http://gpu-box:8000/v1: /v1/PATH goes to its /v1/PATH.
	Upstream string
	// Key, when set, is sent upstream as "Authorization: Bearer KEY" in
	// place of whatever the client sent; when empty, the client's
	// Authorization header is passed on.
	Key string
	// MaxBody bounds a request body in bytes (0: DefaultMaxBody).
	MaxBody int64
	// Timeout bounds the wait for the upstream's response header and then
	// for each piece of its body (0: DefaultUpstreamTimeout). A non-streamed
	// completion sends its header only when it is done, so this is also the
	// longest such a request may take.
	Timeout time.Duration
	// Transport reaches the upstream (nil: a transport with Timeout and
	// connection timeouts of its own).
	Transport http.RoundTripper
	Logger    *log.Logger
}

// DefaultUpstreamTimeout is ProxyConfig.Timeout when left zero.
const DefaultUpstreamTimeout = 10 * time.Minute

// upstreamDialTimeout bounds connecting to the upstream (and its TLS
// handshake).
const upstreamDialTimeout = 10 * time.Second

// Proxy is the http.Handler of /v1/ that passes requests to an upstream
// OpenAI-compatible server. What it passes is bounded both ways: request
// bodies by MaxBody (and must be JSON), request headers to a few
// (Content-Type, Accept, Authorization as configured, X-Request-Id), and
// response headers to those that describe the body or the upstream's
// rate limits, so that the upstream can set no cookie, CORS or security
// header on this origin. Only JSON and Server-Sent Events pass (anything
// else, an HTML page say, is a 502), with X-Content-Type-Options: nosniff.
// Response bodies pass unchanged, each piece flushed to the client as it
// arrives (Server-Sent Events are not held back), but for error bodies,
// which are read whole and lose any copy of Key. A client that leaves cancels its upstream request, which stops
// the generation there.
type Proxy struct {
	base      *url.URL // scheme and host, and a path prefix without /v1
	key       string
	maxBody   int64
	timeout   time.Duration
	transport http.RoundTripper
	log       *log.Logger
}

// NewProxy checks cfg and returns the proxy.
func NewProxy(cfg ProxyConfig) (*Proxy, error) {
	u, err := ParseUpstream(cfg.Upstream)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(cfg.Key, "\r\n\x00") {
		return nil, errors.New("the upstream key must be one line")
	}
	p := &Proxy{base: u, key: cfg.Key, maxBody: cfg.MaxBody, timeout: cfg.Timeout, transport: cfg.Transport, log: cfg.Logger}
	if p.maxBody <= 0 {
		p.maxBody = DefaultMaxBody
	}
	if p.timeout <= 0 {
		p.timeout = DefaultUpstreamTimeout
	}
	if p.log == nil {
		p.log = log.New(discard{}, "", 0)
	}
	if p.transport == nil {
		d := &net.Dialer{Timeout: upstreamDialTimeout, KeepAlive: 30 * time.Second}
		p.transport = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           d.DialContext,
			TLSHandshakeTimeout:   upstreamDialTimeout,
			ResponseHeaderTimeout: p.timeout,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   32,
			DisableCompression:    true, // bodies pass as the upstream sends them
			ForceAttemptHTTP2:     true,
		}
	}
	return p, nil
}

// ParseUpstream checks an -upstream URL: http or https, a host, no user,
// query or fragment. A trailing /v1 is dropped (requests keep theirs).
func ParseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("-upstream: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("-upstream %q: want an http:// or https:// URL", s)
	case u.Host == "":
		return nil, fmt.Errorf("-upstream %q: no host", s)
	case u.User != nil:
		return nil, fmt.Errorf("-upstream %q: put credentials in -upstream-key-file, not the URL", s)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("-upstream %q: no query or fragment, please", s)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}, nil
}

// Request headers passed upstream as they are (Authorization is handled
// apart).
var passRequest = []string{"Content-Type", "Accept", "X-Request-Id"}

// printableASCII reports whether s is all printable ASCII (and tabs).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return false
		}
	}
	return true
}

// passResponse reports whether an upstream response header is passed to
// the client: those about the body and retrying, and rate-limit headers.
func passResponse(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Content-Type", "Content-Length", "Content-Encoding", "Cache-Control", "Retry-After", "X-Request-Id", "Openai-Processing-Ms":
		return true
	}
	return strings.HasPrefix(strings.ToLower(name), "x-ratelimit-")
}

// CleanAPIPath reports whether p (a request's escaped path) is safe to
// pass on under /v1/: no "." or ".." segment, no empty one, no encoded
// slash, backslash, NUL or percent sign (a server that decodes twice reads
// %252e%252e as ..), no ";" (Tomcat and others read "..;" as ..), nothing
// a server could read as another path.
func CleanAPIPath(escaped string) bool {
	if !strings.HasPrefix(escaped, "/v1/") {
		return false
	}
	low := strings.ToLower(escaped)
	if strings.Contains(low, "%2f") || strings.Contains(low, "%5c") || strings.Contains(low, "%00") || strings.Contains(low, "%2e") ||
		strings.Contains(low, "%25") || strings.ContainsAny(escaped, "\\\x00;") {
		return false
	}
	for _, seg := range strings.Split(escaped[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	if !CleanAPIPath(path) {
		WriteError(w, errorf(http.StatusBadRequest, "", "bad path %q", clip(path, 100)))
		return
	}
	var body []byte
	switch r.Method {
	case http.MethodGet:
		if herr := noBody(r); herr != nil {
			WriteError(w, herr)
			return
		}
	case http.MethodPost:
		var herr *Error
		if body, herr = readJSON(w, r, p.maxBody); herr != nil {
			WriteError(w, herr)
			return
		}
	default:
		allow(w, r, http.MethodGet, http.MethodPost)
		return
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	target := *p.base
	target.Path = p.base.Path + r.URL.Path
	target.RawPath = p.base.EscapedPath() + path
	target.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, r.Method, target.String(), bytes.NewReader(body))
	if err != nil {
		WriteError(w, errorf(http.StatusBadRequest, "", "bad request: %v", err))
		return
	}
	for _, h := range passRequest {
		v := r.Header.Values(h)
		for _, s := range v {
			if !printableASCII(s) {
				// Go's client refuses such a value, which would be a 502.
				WriteError(w, errorf(http.StatusBadRequest, "", "header %s: only printable ASCII is passed upstream", h))
				return
			}
		}
		if len(v) > 0 {
			out.Header[h] = v
		}
	}
	if p.key != "" {
		out.Header.Set("Authorization", "Bearer "+p.key)
	} else if v := r.Header.Get("Authorization"); v != "" {
		out.Header.Set("Authorization", v)
	}
	out.Header.Set("User-Agent", "wasmllm-proxy")

	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client left
		}
		p.log.Printf("upstream: %s %s: %v", r.Method, clip(path, 200), err)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			WriteError(w, errorf(http.StatusGatewayTimeout, "", "the upstream server did not answer within %s", p.timeout))
			return
		}
		WriteError(w, errorf(http.StatusBadGateway, "", "the upstream server cannot be reached"))
		return
	}
	defer resp.Body.Close()
	if !apiContent(resp) {
		p.log.Printf("upstream: %s %s: %d with Content-Type %q, not passed", r.Method, clip(path, 200), resp.StatusCode, clip(resp.Header.Get("Content-Type"), 100))
		WriteError(w, notAPIContent(resp))
		return
	}
	isErr := resp.StatusCode >= 400
	var errBody []byte
	if isErr {
		var herr *Error
		if errBody, herr = errorBody(resp, p.key); herr != nil {
			WriteError(w, herr)
			return
		}
	}
	for k, v := range resp.Header {
		if passResponse(k) {
			w.Header()[k] = v
		}
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if isErr {
		w.Header().Del("Content-Length") // the key taken out changes it
		w.WriteHeader(resp.StatusCode)
		w.Write(errBody)
		return
	}
	w.WriteHeader(resp.StatusCode)
	p.copyBody(ctx, cancel, w, resp.Body, path)
}

// copyBody passes the upstream body to the client piece by piece, flushing
// each; a stall longer than the timeout cancels the upstream request. A
// body cut short upstream aborts the client's connection, so that the
// client sees a broken response rather than a complete one.
func (p *Proxy) copyBody(ctx context.Context, cancel func(), w http.ResponseWriter, body io.Reader, path string) {
	rc := http.NewResponseController(w)
	idle := time.AfterFunc(p.timeout, cancel)
	defer idle.Stop()
	buf := make([]byte, 32<<10)
	for {
		idle.Reset(p.timeout)
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the client left; the deferred cancel stops the upstream
			}
			if werr := rc.Flush(); werr != nil {
				return
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			if ctx.Err() != nil && !idleFired(idle) {
				return // the client left
			}
			p.log.Printf("upstream: %s: the response was cut short: %v", clip(path, 200), err)
			panic(http.ErrAbortHandler)
		}
	}
}

// idleFired reports whether the idle timer has run (Stop returns false for
// a timer that has fired).
func idleFired(t *time.Timer) bool { return !t.Stop() }
