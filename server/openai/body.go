package openai

import (
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
)

// DefaultMaxBody bounds a request body when the config leaves it zero:
// 8 MiB is about two million tokens of text, past any context served here.
const DefaultMaxBody = 8 << 20

// readJSON reads a request's JSON body, at most max bytes. The body must
// say it is JSON (Content-Type application/json): a page of another
// origin cannot send that without a CORS preflight, which the server
// grants only to the origins of -cors, so no other site can spend the
// engine's time or the upstream's key through a visitor's browser.
//
// (Once the body is read, net/http lifts the connection's read deadline
// for its watch on the client, so a generation may outlast the server's
// read timeout: TestLongerThanReadTimeout.)
func readJSON(w http.ResponseWriter, r *http.Request, max int64) ([]byte, *Error) {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || !strings.EqualFold(mt, "application/json") {
		return nil, errorf(http.StatusUnsupportedMediaType, "", "the request body must be JSON, sent with Content-Type: application/json (got %q)", clip(ct, 100))
	}
	if r.ContentLength > max {
		return nil, errorf(http.StatusRequestEntityTooLarge, "", "the request body of %d bytes is over this server's limit of %d bytes", r.ContentLength, max)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errorf(http.StatusRequestEntityTooLarge, "", "the request body is over this server's limit of %d bytes", max)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			// The server's read deadline: a body sent too slowly.
			return nil, errorf(http.StatusRequestTimeout, "", "the request body did not arrive in time")
		}
		return nil, errorf(http.StatusBadRequest, "", "reading the request body: %v", err)
	}
	return data, nil
}

// noBody refuses a body on a request that takes none (GET).
func noBody(r *http.Request) *Error {
	if r.ContentLength > 0 || r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
		return errorf(http.StatusBadRequest, "", "%s %s takes no request body", r.Method, clip(r.URL.Path, 100))
	}
	return nil
}

// clip cuts s to at most n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
