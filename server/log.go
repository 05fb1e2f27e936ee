package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
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

// sanitize makes client-supplied text safe for a one-line log: C0 control
// characters, DEL and spaces become '_'; what a terminal or viewer could
// act on or display misleadingly is escaped: C1 controls (U+0080-U+009F,
// such as U+009B, the one-character CSI) as \u009b, line and paragraph
// separators, bidi controls (U+061C, U+200E-U+200F, U+202A-U+202E,
// U+2066-U+2069) and the byte order mark likewise, invalid UTF-8 as \xNN,
// and '\' itself as \\ so that escapes cannot be forged. It is cut to max
// bytes of input first, at a character boundary.
func sanitize(s string, max int) string { return escapeLog(s, max, false) }

// sanitizeMsg is sanitize for free text at the end of a line, such as an
// error (which may quote a requested name): it keeps spaces.
func sanitizeMsg(s string, max int) string { return escapeLog(s, max, true) }

func escapeLog(s string, max int, spaces bool) string {
	if len(s) > max {
		cut := max
		for cut > 0 && cut > max-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == ' ' && spaces:
			b.WriteByte(' ')
		case r <= ' ' || r == 0x7f:
			b.WriteByte('_')
		case r == '\\':
			b.WriteString(`\\`)
		case logEscaped(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// logEscaped reports whether r is escaped in the log: a C1 control, a line
// or paragraph separator, a bidi control or formatting mark, or a BOM.
func logEscaped(r rune) bool {
	switch {
	case 0x80 <= r && r <= 0x9f, r == 0x061c, r == 0x200e, r == 0x200f, 0x2028 <= r && r <= 0x202e,
		0x2066 <= r && r <= 0x2069, r == 0xfeff:
		return true
	}
	return false
}
