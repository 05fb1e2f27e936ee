package server

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serveContent is http.ServeContent for content of size bytes, with the
// Range header first made what ServeContent handles right (see fixRange).
func serveContent(w http.ResponseWriter, r *http.Request, name string, modtime time.Time, size int64, content io.ReadSeeker) {
	if rng, ok := fixRange(r.Header.Get("Range"), size); ok {
		r = r.Clone(r.Context()) // the access log keeps the original
		if rng == "" {
			r.Header.Del("Range")
		} else {
			r.Header.Set("Range", rng)
		}
	}
	http.ServeContent(w, r, name, modtime, content)
}

// fixRange rewrites a Range header (ok: it changed) so that
// http.ServeContent answers it as RFC 9110 §14.1 says. ServeContent takes a
// zero-length suffix range (bytes=-0), and on an empty file any suffix
// range, as a range of no bytes, and answers 206 with a Content-Range such
// as "bytes 100-99/100". Such a range is unsatisfiable: it is dropped, and
// when no other range is left the header becomes bytes=SIZE-, which
// ServeContent answers 416 with "Content-Range: bytes */SIZE". On an empty
// file the header is dropped: ServeContent answers 200, as it does for
// any range there. If-Range, and headers ServeContent rejects as
// malformed, are left to ServeContent.
func fixRange(rng string, size int64) (string, bool) {
	specs, ok := strings.CutPrefix(rng, "bytes=")
	if !ok {
		return rng, false
	}
	var kept []string
	dropped := false
	for spec := range strings.SplitSeq(specs, ",") {
		if n, ok := suffixLength(spec); ok && (n == 0 || size == 0) {
			dropped = true
			continue
		}
		kept = append(kept, spec)
	}
	switch {
	case !dropped:
		return rng, false
	case size == 0:
		return "", true
	case len(strings.TrimSpace(strings.Join(kept, ""))) == 0:
		return "bytes=" + strconv.FormatInt(size, 10) + "-", true
	}
	return "bytes=" + strings.Join(kept, ","), true
}

// suffixLength returns N of a well-formed suffix range spec "-N".
func suffixLength(spec string) (int64, bool) {
	digits, ok := strings.CutPrefix(strings.Trim(spec, " \t"), "-")
	digits = strings.Trim(digits, " \t")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}
