package grammar

import "unicode/utf8"

// byteRange is the bytes lo..hi inclusive.
type byteRange struct{ lo, hi byte }

func encodeRune(buf []byte, r rune) int { return utf8.EncodeRune(buf, r) }

// utf8Sequences calls emit with byte-range sequences whose union is the
// UTF-8 encodings of lo..hi (no surrogates in the range), each sequence one
// encoding length with every byte a contiguous range.
func utf8Sequences(lo, hi rune, emit func([]byteRange)) {
	// Split at the encoding-length boundaries.
	for _, b := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= b && hi > b {
			utf8Sequences(lo, b, emit)
			utf8Sequences(b+1, hi, emit)
			return
		}
	}
	if hi < 0x80 {
		emit([]byteRange{{byte(lo), byte(hi)}})
		return
	}
	// Split until every continuation byte ranges over a full or an
	// aligned block.
	for i := 1; i < 4; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Sequences(lo, lo|m, emit)
				utf8Sequences((lo|m)+1, hi, emit)
				return
			}
			if hi&m != m {
				utf8Sequences(lo, (hi&^m)-1, emit)
				utf8Sequences(hi&^m, hi, emit)
				return
			}
		}
	}
	var a, b [4]byte
	n := utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([]byteRange, n)
	for i := range n {
		seq[i] = byteRange{a[i], b[i]}
	}
	emit(seq)
}
