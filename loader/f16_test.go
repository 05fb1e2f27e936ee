package loader

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// TestF16ToF32All checks every half against the x448/float16 package, an
// independent implementation, and the round trip back through F32ToF16.
func TestF16ToF32All(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := F16ToF32(h)
		want := float16.Frombits(h).Float32()
		if !sameFloat(got, want) || math.Float32bits(got)>>31 != uint32(h>>15) {
			t.Fatalf("F16ToF32(%#04x) = %v (%#08x), want %v (%#08x)", h, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		back := F32ToF16(got)
		if got != got { // NaN: any NaN of the same sign will do
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 || back>>15 != h>>15 {
				t.Fatalf("F32ToF16(NaN from %#04x) = %#04x, not a NaN", h, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, back)
		}
	}
}

func TestF16ToF32ByHand(t *testing.T) {
	for _, c := range []struct {
		h    uint16
		want float32
	}{
		{0x0000, 0}, {0x3c00, 1}, {0xc000, -2}, {0x7bff, 65504}, {0x0400, 0x1p-14},
		{0x0001, 0x1p-24}, {0x03ff, 1023 * 0x1p-24}, {0x0200, 0x1p-15}, {0x8001, -0x1p-24},
		{0x3555, 0.333251953125}, {0x7c00, float32(math.Inf(1))}, {0xfc00, float32(math.Inf(-1))},
	} {
		if got := F16ToF32(c.h); got != c.want {
			t.Errorf("F16ToF32(%#04x) = %v, want %v", c.h, got, c.want)
		}
	}
	if got := F16ToF32(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("F16ToF32(0x8000) = %v, want -0", got)
	}
}

// TestF32ToF16Rounding checks round-to-nearest-even at every half-way point:
// for each pair of adjacent halves, the float32 exactly between them and its
// two float32 neighbours.
func TestF32ToF16Rounding(t *testing.T) {
	check := func(f float32, want uint16) {
		t.Helper()
		if got := F32ToF16(f); got != want {
			t.Fatalf("F32ToF16(%v = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	for sign := uint16(0); sign < 2; sign++ {
		for h := uint16(0); h < 0x7bff; h++ { // pairs of finite halves; overflow is checked by hand below
			lo := h | sign<<15
			hi := (h + 1) | sign<<15
			a, b := float64(F16ToF32(lo)), float64(F16ToF32(hi))
			mid := float32((a + b) / 2) // exact: a and b have 11-bit mantissas
			if float64(mid) != (a+b)/2 {
				t.Fatalf("midpoint of %#04x and %#04x not exact", lo, hi)
			}
			even := lo
			if h&1 == 1 {
				even = hi
			}
			check(mid, even)
			check(math.Nextafter32(mid, 0), lo)
			check(math.Nextafter32(mid, float32(math.Inf(int(1-2*int(sign))))), hi)
		}
	}
	// By hand: overflow, underflow and ties.
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{65504, 0x7bff}, {65519.996, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00}, {-1e10, 0xfc00},
		{0x1p-25, 0x0000}, {0x1.000002p-25, 0x0001}, {3 * 0x1p-25, 0x0002}, {0x1p-26, 0},
		{1 + 0x1p-11, 0x3c00}, {1 + 3*0x1p-11, 0x3c02}, {0x1p-14 - 0x1p-25, 0x0400},
		{1e-30, 0}, {float32(math.Inf(1)), 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
	} {
		check(c.f, c.want)
	}
	if got := F32ToF16(float32(math.Copysign(0, -1))); got != 0x8000 {
		t.Errorf("F32ToF16(-0) = %#04x", got)
	}
	if got := F32ToF16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("F32ToF16(NaN) = %#04x, not a NaN", got)
	}
}

// TestF32ToF16Random compares random float32 bit patterns with x448/float16.
func TestF32ToF16Random(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 1<<20; i++ {
		f := math.Float32frombits(r.Uint32())
		if f != f {
			continue
		}
		if got, want := F32ToF16(f), float16.Fromfloat32(f).Bits(); got != want {
			t.Fatalf("F32ToF16(%v = %#08x) = %#04x, x448/float16 says %#04x", f, math.Float32bits(f), got, want)
		}
	}
}

func TestBF16(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToF32(h)
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BF16ToF32(%#04x) = %#08x", h, math.Float32bits(f))
		}
		if f == f && F32ToBF16(f) != h {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, F32ToBF16(f))
		}
	}
	for _, c := range []struct {
		bits uint32
		want uint16
	}{
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above the tie
		{0x7f7fffff, 0x7f80}, // max float rounds to infinity
		{0x7fc00001, 0x7fc0}, // NaN stays NaN
		{0x7f800001, 0x7fc0}, // signalling NaN is quietened
	} {
		if got := F32ToBF16(math.Float32frombits(c.bits)); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.bits, got, c.want)
		}
	}
}
