package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"wasmllm/server/openai"
)

// clientKey checks the API key that clients of /v1/ must send, as OpenAI's
// clients and vLLM's --api-key do: "Authorization: Bearer KEY". The key is
// kept and compared as its SHA-256, in constant time, so that neither the
// comparison's time nor its length gives a byte of it away.
type clientKey struct {
	sum [sha256.Size]byte
}

func newClientKey(key string) *clientKey {
	if key == "" {
		return nil
	}
	return &clientKey{sum: sha256.Sum256([]byte(key))}
}

// check returns nil when r carries the key, or the 401 to answer: one
// Authorization header, of the Bearer scheme, with the key.
func (k *clientKey) check(r *http.Request) *openai.Error {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return &openai.Error{Status: http.StatusUnauthorized,
			Message: "this server needs an API key: send it in an Authorization header using Bearer auth (Authorization: Bearer YOUR_KEY)"}
	}
	scheme, token, _ := strings.Cut(vals[0], " ")
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	ok := subtle.ConstantTimeCompare(got[:], k.sum[:]) == 1
	if !ok || len(vals) != 1 || !strings.EqualFold(scheme, "Bearer") {
		// The key is never echoed, not even in part.
		return &openai.Error{Status: http.StatusUnauthorized, Message: "incorrect API key provided"}
	}
	return nil
}

// refuseUnauthorized answers e, a 401, without reading the request body.
func refuseUnauthorized(w http.ResponseWriter, e *openai.Error) {
	refuseBody(w)
	w.Header().Set("WWW-Authenticate", `Bearer realm="wasmllm"`)
	openai.WriteError(w, e)
}
