package sampler

import (
	crand "crypto/rand"
	"encoding/binary"
)

// rng is SplitMix64: a 64-bit state advanced by a constant and mixed. It is
// small, fast, passes BigCrush, and gives the same stream on every platform.
type rng struct{ state uint64 }

func newRNG(seed int64) rng { return rng{state: uint64(seed)} }

// randomSeed draws a seed from the operating system (crypto.getRandomValues
// in the browser) for requests without one.
func randomSeed() int64 {
	var b [8]byte
	_, _ = crand.Read(b[:]) // documented never to fail: it aborts the program instead
	return int64(binary.LittleEndian.Uint64(b[:]))
}

func (r *rng) uint64() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// float64 returns a uniform value in [0, 1) with 53 random bits.
func (r *rng) float64() float64 { return float64(r.uint64()>>11) * 0x1p-53 }
