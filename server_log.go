package main

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// logWriter records a response's status and body size for the access log.
type logWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *logWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// ReadFrom keeps the underlying writer's sendfile path for file bodies.
func (w *logWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(struct{ io.Writer }{w.ResponseWriter}, r)
	}
	w.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequest writes the access-log line: method, path, status, body bytes,
// requested range ("-" for none) and duration.
func (h *handler) logRequest(w *logWriter, r *http.Request, d time.Duration) {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	p := r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		p += "?" + r.URL.RawQuery
	}
	rng := r.Header.Get("Range")
	if rng == "" {
		rng = "-"
	}
	h.log.Printf("%s %s %d %d %s %s", sanitize(r.Method, 16), sanitize(p, 400), status, w.bytes, sanitize(rng, 100), d.Round(time.Microsecond))
}

// sanitize makes client-supplied text safe for a one-line log: control
// characters and spaces become '_', and it is cut to max bytes.
func sanitize(s string, max int) string {
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}
