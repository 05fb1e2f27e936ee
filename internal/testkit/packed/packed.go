// Package packed stores float32-heavy bytes compactly and losslessly: the
// bytes of every 4-byte word are split into four planes (byte 0 of each
// word, then byte 1, 2 and 3), which puts the low-entropy exponent bytes of
// float32 data together, and the planes are deflate-compressed
// (compress/flate, best compression). Bytes past the last whole word follow
// the planes unchanged. It is the encoding of the golden files' rows and of
// the test weights kept compressed (internal/testkit/fixtures).
package packed

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
)

// Pack returns plain byte-shuffled and deflated.
func Pack(plain []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, err := flate.NewWriter(&out, flate.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(shuffle(plain)); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Unpack inverts Pack for data that must hold exactly size bytes: a stream
// that is corrupt, holds another size, or is followed by more bytes is an
// error.
func Unpack(data []byte, size int) ([]byte, error) {
	br := bytes.NewReader(data)
	s, err := io.ReadAll(io.LimitReader(flate.NewReader(br), int64(size)+1))
	if err != nil {
		return nil, fmt.Errorf("deflate: %v", err)
	}
	if len(s) != size {
		return nil, fmt.Errorf("%d bytes, want %d", len(s), size)
	}
	if br.Len() != 0 {
		return nil, fmt.Errorf("%d bytes after the deflate stream", br.Len())
	}
	return unshuffle(s), nil
}

// shuffle writes byte k of every 4-byte word into plane k.
func shuffle(plain []byte) []byte {
	n := len(plain) / 4
	out := make([]byte, len(plain))
	for i := range n {
		for k := range 4 {
			out[k*n+i] = plain[4*i+k]
		}
	}
	copy(out[4*n:], plain[4*n:])
	return out
}

func unshuffle(s []byte) []byte {
	n := len(s) / 4
	out := make([]byte, len(s))
	for i := range n {
		for k := range 4 {
			out[4*i+k] = s[k*n+i]
		}
	}
	copy(out[4*n:], s[4*n:])
	return out
}
