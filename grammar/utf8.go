package grammar

import (
	"sort"
	"unicode/utf8"
)

// runeRange is the characters lo..hi inclusive.
type runeRange struct{ lo, hi rune }

// byteRange is the bytes lo..hi inclusive.
type byteRange struct{ lo, hi byte }

const (
	surrogateLo = 0xD800
	surrogateHi = 0xDFFF
)

// normalizeRanges sorts and merges ranges and removes the surrogates,
// which UTF-8 cannot encode.
func normalizeRanges(rs []runeRange) []runeRange {
	var cut []runeRange
	for _, r := range rs {
		if r.lo <= surrogateHi && r.hi >= surrogateLo {
			if r.lo < surrogateLo {
				cut = append(cut, runeRange{r.lo, surrogateLo - 1})
			}
			if r.hi > surrogateHi {
				cut = append(cut, runeRange{surrogateHi + 1, r.hi})
			}
			continue
		}
		cut = append(cut, r)
	}
	sort.Slice(cut, func(i, j int) bool { return cut[i].lo < cut[j].lo })
	var out []runeRange
	for _, r := range cut {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// complementRanges is every Unicode scalar value not in rs.
func complementRanges(rs []runeRange) []runeRange {
	rs = normalizeRanges(rs)
	var out []runeRange
	next := rune(0)
	for _, r := range rs {
		if r.lo > next {
			out = append(out, runeRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, runeRange{next, utf8.MaxRune})
	}
	return normalizeRanges(out)
}

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
