package tokenizer

import "unicode/utf8"

// appendLossy appends b to dst as UTF-8, replacing each maximal invalid
// subsequence with one U+FFFD, as the WHATWG TextDecoder and Rust's
// String::from_utf8_lossy do (Go's own conversion replaces byte by byte).
func appendLossy(dst []byte, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		if _, w := utf8.DecodeRune(b[i:]); w > 1 {
			dst = append(dst, b[i:i+w]...)
			i += w
			continue
		}
		dst = append(dst, "\uFFFD"...)
		i += validPrefixLen(b[i:])
	}
	return dst
}

// validPrefixLen returns the length of the longest prefix of b that starts
// a well-formed UTF-8 sequence (at least 1), which is the maximal subpart
// that one U+FFFD replaces when the sequence is not complete.
func validPrefixLen(b []byte) int {
	need, lo, hi := seqShape(b[0])
	if need == 0 {
		return 1
	}
	n := 1
	for k := 1; k <= need && k < len(b); k++ {
		c := b[k]
		l, h := byte(0x80), byte(0xBF)
		if k == 1 {
			l, h = lo, hi
		}
		if c < l || c > h {
			break
		}
		n++
	}
	return n
}

// seqShape returns how many continuation bytes lead byte c needs and the
// allowed range of the first one; need is 0 for bytes that never start a
// sequence.
func seqShape(c byte) (need int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 1, 0x80, 0xBF
	case c == 0xE0:
		return 2, 0xA0, 0xBF
	case c == 0xED:
		return 2, 0x80, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		return 2, 0x80, 0xBF
	case c == 0xF0:
		return 3, 0x90, 0xBF
	case c == 0xF4:
		return 3, 0x80, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		return 3, 0x80, 0xBF
	}
	return 0, 0, 0
}

// incompleteTail returns the length of the suffix of b that is a proper
// prefix of a well-formed UTF-8 sequence: bytes that a later token may
// complete. It is 0 when b ends on a character boundary or on bytes that
// can never become valid.
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return 0
		}
		if c >= 0xC0 {
			need, _, _ := seqShape(c)
			if need >= k && validPrefixLen(b[len(b)-k:]) == k {
				return k
			}
			return 0
		}
	}
	return 0
}
