package packed

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 3, 4, 7, 4096, 4099} {
		plain := make([]byte, n)
		for i := 0; i+4 <= n; i += 4 {
			binary.LittleEndian.PutUint32(plain[i:], math.Float32bits(float32(r.NormFloat64())))
		}
		for i := n &^ 3; i < n; i++ {
			plain[i] = byte(r.Uint32())
		}
		p, err := Pack(plain)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Unpack(p, n)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%d bytes: round trip %v", n, err)
		}
		if n >= 4096 && len(p) >= n {
			t.Errorf("%d float32 bytes packed to %d", n, len(p))
		}
		if _, err := Unpack(p, n+1); err == nil {
			t.Errorf("%d bytes: a wrong size was accepted", n)
		}
		if _, err := Unpack(append(p, 0), n); err == nil {
			t.Errorf("%d bytes: trailing bytes were accepted", n)
		}
	}
	if _, err := Unpack([]byte("not deflate"), 4); err == nil {
		t.Error("garbage was accepted")
	}
}
