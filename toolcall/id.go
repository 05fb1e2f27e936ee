package toolcall

import "math/rand/v2"

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewID returns a tool-call id as OpenAI and vLLM make them: "call_" and
// 24 random letters and digits, drawn from r, or from math/rand/v2's
// randomly seeded generator if r is nil.
func NewID(r *rand.Rand) string {
	b := make([]byte, 0, 5+24)
	b = append(b, "call_"...)
	for range 24 {
		var i int
		if r != nil {
			i = r.IntN(len(idAlphabet))
		} else {
			i = rand.IntN(len(idAlphabet))
		}
		b = append(b, idAlphabet[i])
	}
	return string(b)
}
