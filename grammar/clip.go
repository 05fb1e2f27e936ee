package grammar

import "unicode/utf8"

// maxEcho bounds the bytes of a request's text that an error repeats.
const maxEcho = 64

// clip is s cut to its first maxEcho bytes (at a character boundary),
// with "..." when it was longer: an error names a pattern, a rule or a
// keyword without echoing megabytes of it.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	n := maxEcho
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
