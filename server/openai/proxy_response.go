package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
)

// What an upstream answer may carry to the client: API responses are JSON
// or Server-Sent Events, nothing a browser would render or run on this
// origin (an HTML page of a front proxy, say), and an error body never the
// key the proxy sent upstream.

// maxErrorBody bounds an upstream error body, which the proxy reads whole
// to take the key out of it. OpenAI's and vLLM's are well under 1 KiB.
const maxErrorBody = 1 << 20

// apiContent reports whether an upstream answer's body may pass: JSON
// (application/json or a +json type) or text/event-stream, or no body.
func apiContent(resp *http.Response) bool {
	if resp.ContentLength == 0 || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		return true
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return false
	}
	return mt == "application/json" || mt == "text/event-stream" ||
		strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// notAPIContent is the 502 that replaces an upstream answer that is not
// JSON or Server-Sent Events.
func notAPIContent(resp *http.Response) *Error {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "none"
	}
	return errorf(http.StatusBadGateway, "", "the upstream server answered %d with Content-Type %s; only JSON and Server-Sent Events are passed",
		resp.StatusCode, clip(ct, 60))
}

// errorBody reads an upstream error body and takes key out of it, as it
// is and as a JSON string spells it. A body that cannot be checked (over
// maxErrorBody, compressed, cut short) is replaced by an error of the
// proxy's own with the upstream's status.
func errorBody(resp *http.Response, key string) ([]byte, *Error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
	switch enc := resp.Header.Get("Content-Encoding"); {
	case err != nil, len(data) > maxErrorBody, enc != "" && !strings.EqualFold(enc, "identity"):
		return nil, errorf(resp.StatusCode, "", "the upstream server answered %d (its error body is not passed: it could not be read whole)", resp.StatusCode)
	}
	if key == "" {
		return data, nil
	}
	for _, s := range keySpellings(key) {
		data = bytes.ReplaceAll(data, []byte(s), []byte("[redacted]"))
	}
	return data, nil
}

// keySpellings are the ways a body may hold key: as it is, and escaped in
// a JSON string (with and without HTML escapes, with "/" as "\/").
func keySpellings(key string) []string {
	out := []string{key}
	for _, html := range []bool{false, true} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		enc.Encode(key)
		s := strings.TrimSuffix(b.String(), "\n")
		s = s[1 : len(s)-1]
		out = append(out, s, strings.ReplaceAll(s, "/", `\/`))
	}
	return out
}
