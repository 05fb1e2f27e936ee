package loader

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// Half-precision constants, written out by hand.
const (
	hOne      = 0x3c00 // 1.0
	hTwo      = 0x4000 // 2.0
	hHalf     = 0x3800 // 0.5
	hMinusOne = 0xbc00 // -1.0
	hMinus8   = 0xc800 // -8.0
	hThird    = 0x3555 // 0.333251953125
	hTenth    = 0x2e66 // 0.0999755859375
	hTiny     = 0x0001 // 2^-24, the smallest subnormal
	hSubMax   = 0x03ff // 1023 * 2^-24, the largest subnormal
	hNegTiny  = 0x8001 // -2^-24
	hMax      = 0x7bff // 65504
	hInf      = 0x7c00
)

// halfValue is the exact value of the constants above, for expectations.
var halfValue = map[uint16]float32{
	hOne: 1, hTwo: 2, hHalf: 0.5, hMinusOne: -1, hMinus8: -8,
	hThird: 0.333251953125, hTenth: 0.0999755859375,
	hTiny: 0x1p-24, hSubMax: 1023 * 0x1p-24, hNegTiny: -0x1p-24, hMax: 65504,
	hInf: float32(math.Inf(1)),
}

func put16(b []byte, v uint16) { binary.LittleEndian.PutUint16(b, v) }

func dequant(t *testing.T, d DType, src []byte, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := Dequantize(d, src, out); err != nil {
		t.Fatalf("Dequantize(%s): %v", d, err)
	}
	return out
}

func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

func checkAll(t *testing.T, what string, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		if !sameFloat(got[i], want[i]) {
			if bad < 8 {
				t.Errorf("%s: element %d = %v (%#08x), want %v (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements differ", what, bad, len(want))
	}
}

// --- Test-side packers: each places element e's bits where ggml's block
// comments (ggml-common.h) and encoders (quantize_row_*_ref) put them,
// working element by element rather than in the decoder's loop order.

// packNibbles32 stores 32 4-bit values: element e in byte e%16, high nibble
// when e >= 16.
func packNibbles32(qs []byte, q []int) {
	clear(qs[:16])
	for e := 0; e < 32; e++ {
		qs[e%16] |= byte(q[e]&0xf) << (4 * (e / 16))
	}
}

// packQh32 stores the fifth bits of 32 values: element e is bit e.
func packQh32(qh []byte, q []int) {
	var v uint32
	for e := 0; e < 32; e++ {
		v |= uint32(q[e]>>4&1) << e
	}
	binary.LittleEndian.PutUint32(qh, v)
}

// packScalesK4 is the 6-bit scale/min packing of quantize_row_q4_K_ref.
func packScalesK4(s []byte, sc, m [8]int) {
	clear(s[:12])
	for j := 0; j < 8; j++ {
		if j < 4 {
			s[j] = byte(sc[j])
			s[j+4] = byte(m[j])
		} else {
			s[j+4] = byte(sc[j]&0xf | (m[j]&0xf)<<4)
			s[j-4] |= byte(sc[j]>>4) << 6
			s[j] |= byte(m[j]>>4) << 6
		}
	}
}

// packQ4K: element e: group i=e/64, byte qs[32i + e%32], high nibble when
// e%64 >= 32; sub-block e/32.
func packQ4K(blk []byte, d, dmin uint16, sc, m [8]int, q []int) {
	put16(blk, d)
	put16(blk[2:], dmin)
	packScalesK4(blk[4:], sc, m)
	qs := blk[16:144]
	clear(qs)
	for e := 0; e < 256; e++ {
		qs[32*(e/64)+e%32] |= byte(q[e]&0xf) << (4 * (e % 64 / 32))
	}
}

// packQ5K: as Q4_K, and element e's fifth bit is bit e/32 of qh[e%32].
func packQ5K(blk []byte, d, dmin uint16, sc, m [8]int, q []int) {
	put16(blk, d)
	put16(blk[2:], dmin)
	packScalesK4(blk[4:], sc, m)
	qh, qs := blk[16:48], blk[48:176]
	clear(qh)
	clear(qs)
	for e := 0; e < 256; e++ {
		qs[32*(e/64)+e%32] |= byte(q[e]&0xf) << (4 * (e % 64 / 32))
		qh[e%32] |= byte(q[e]>>4&1) << (e / 32)
	}
}

// packQ6K: element e = 128h + 32k + l: low nibble in ql[64h + l + 32(k%2)]
// (high nibble when k >= 2), top 2 bits at bit 2k of qh[32h + l], scale e/16.
// q holds the unsigned 6-bit codes (value + 32).
func packQ6K(blk []byte, d uint16, sc [16]int8, q []int) {
	ql, qh := blk[0:128], blk[128:192]
	clear(ql)
	clear(qh)
	for e := 0; e < 256; e++ {
		h, k, l := e/128, e%128/32, e%32
		ql[64*h+l+32*(k%2)] |= byte(q[e]&0xf) << (4 * (k / 2))
		qh[32*h+l] |= byte(q[e]>>4&3) << (2 * k)
	}
	for i, s := range sc {
		blk[192+i] = byte(s)
	}
	put16(blk[208:], d)
}

// --- Literal, hand-computed cases.

func TestDequantizeByHand(t *testing.T) {
	t.Run("Q8_0", func(t *testing.T) {
		blk := make([]byte, 34)
		put16(blk, hHalf)
		for j, q := range []int8{-128, -127, -1, 0, 1, 127, 3} {
			blk[2+j] = byte(q)
		}
		got := dequant(t, Q8_0, blk, 32)
		checkAll(t, "Q8_0", got[:7], []float32{-64, -63.5, -0.5, 0, 0.5, 63.5, 1.5})
		put16(blk, hTiny) // subnormal scale: q * 2^-24 is exact
		got = dequant(t, Q8_0, blk, 32)
		checkAll(t, "Q8_0 subnormal d", got[:7], []float32{-128 * 0x1p-24, -127 * 0x1p-24, -0x1p-24, 0, 0x1p-24, 127 * 0x1p-24, 3 * 0x1p-24})
		put16(blk, hInf) // ggml multiplies: inf*0 is NaN, inf*-1 is -inf
		got = dequant(t, Q8_0, blk, 32)
		inf := float32(math.Inf(1))
		checkAll(t, "Q8_0 inf d", got[2:5], []float32{-inf, float32(math.NaN()), inf})
	})
	t.Run("Q4_0", func(t *testing.T) {
		blk := make([]byte, 18)
		put16(blk, hMinusOne)
		blk[2] = 0xf0  // element 0: 0 -> (0-8)*-1 = 8; element 16: 15 -> -7
		blk[3] = 0x08  // element 1: 8 -> 0*-1 = -0; element 17: 0 -> 8
		blk[17] = 0x7f // element 15: 15 -> -7; element 31: 7 -> 1
		got := dequant(t, Q4_0, blk, 32)
		checkAll(t, "Q4_0", []float32{got[0], got[16], got[1], got[17], got[15], got[31], got[2]},
			[]float32{8, -7, float32(math.Copysign(0, -1)), 8, -7, 1, 8})
	})
	t.Run("Q4_1", func(t *testing.T) {
		blk := make([]byte, 20)
		put16(blk, hOne)
		put16(blk[2:], hMinus8)
		blk[4] = 0xf0  // element 0: 0*1 - 8 = -8; element 16: 15 - 8 = 7
		blk[19] = 0x3c // element 15: 12 - 8 = 4; element 31: 3 - 8 = -5
		got := dequant(t, Q4_1, blk, 32)
		checkAll(t, "Q4_1", []float32{got[0], got[16], got[15], got[31], got[1]}, []float32{-8, 7, 4, -5, -8})
	})
	t.Run("Q5_0", func(t *testing.T) {
		blk := make([]byte, 22)
		put16(blk, hHalf)
		binary.LittleEndian.PutUint32(blk[2:], 1<<0|1<<31) // fifth bits of elements 0 and 31
		blk[6] = 0xff                                      // element 0: 31 -> 7.5; element 16: 15 -> -0.5
		blk[21] = 0xf0                                     // element 15: 0 -> -8; element 31: 31 -> 7.5
		got := dequant(t, Q5_0, blk, 32)
		checkAll(t, "Q5_0", []float32{got[0], got[16], got[15], got[31], got[1]}, []float32{7.5, -0.5, -8, 7.5, -8})
	})
	t.Run("Q5_1", func(t *testing.T) {
		blk := make([]byte, 24)
		put16(blk, hTwo)
		put16(blk[2:], hMinusOne)
		binary.LittleEndian.PutUint32(blk[4:], 1<<16) // fifth bit of element 16
		blk[8] = 0xf1                                 // element 0: 1 -> 2-1 = 1; element 16: 31 -> 62-1 = 61
		got := dequant(t, Q5_1, blk, 32)
		checkAll(t, "Q5_1", []float32{got[0], got[16], got[1]}, []float32{1, 61, -1})
	})
	t.Run("Q4_K", func(t *testing.T) {
		blk := make([]byte, 144)
		put16(blk, hOne)
		put16(blk[2:], hHalf)
		// Sub-block 0: sc 63, m 63; sub-block 5: sc 33 (0b100001), m 18 (0b010010).
		blk[4+0] = 63       // sc0 = 63
		blk[4+4] = 63       // m0 = 63
		blk[4+1] = 2 << 6   // sc1 = 0, top bits of sc5 = 0b10
		blk[4+5] = 1 << 6   // m1 = 0, top bits of m5 = 0b01
		blk[4+9] = 1 | 2<<4 // low nibbles of sc5 (1) and m5 (2)
		blk[16] = 0x0f      // element 0 (sub-block 0): q 15; element 32 (sub-block 1): q 0
		blk[16+64] = 0xa0   // element 128 (sub-block 4): q 0; element 160 (sub-block 5): q 10
		got := dequant(t, Q4_K, blk, 256)
		// 1*63*15 - 0.5*63 = 913.5; sub-block 1 has sc = m = 0 (top bits of
		// bytes 1 and 5 are clear); element 160: 1*33*10 - 0.5*18 = 321.
		checkAll(t, "Q4_K", []float32{got[0], got[1], got[32], got[160], got[161]}, []float32{913.5, -31.5, 0, 321, -9})
	})
	t.Run("Q5_K", func(t *testing.T) {
		blk := make([]byte, 176)
		put16(blk, hTwo)
		put16(blk[2:], hOne)
		blk[4+7] = 5        // m3 (the min of sub-block 3) = 5
		blk[4+3] = 2        // sc3 = 2
		blk[16+1] = 1 << 3  // qh[1] bit 3: fifth bit of element 3*32+1 = 97
		blk[48+32+1] = 0xf0 // qs[33]: element 65 (low nibble) 0, element 97 (high nibble) 15
		got := dequant(t, Q5_K, blk, 256)
		// element 97 (sub-block 3): 2*2*31 - 1*5 = 119; element 96: 2*2*0 - 5 = -5.
		checkAll(t, "Q5_K", []float32{got[97], got[96], got[65]}, []float32{119, -5, 0})
	})
	t.Run("Q6_K", func(t *testing.T) {
		blk := make([]byte, 210)
		put16(blk[208:], hHalf)
		blk[192+0] = 0x80  // scale 0 = -128
		blk[192+15] = 0x7f // scale 15 = 127
		blk[0] = 0x0f      // element 0: low 4 bits 15
		blk[128] = 0x03    // element 0: top bits 3 -> q 63 -> 31
		blk[64+32+31] = 0xf0
		blk[128+32+31] = 0xc0 // element 255 = 128+96+31: ql[64+32+31] high nibble 15, qh bits 6-7 = 3 -> 31
		got := dequant(t, Q6_K, blk, 256)
		// element 0: 0.5*-128*31 = -1984; element 1 (q code 0): 0.5*-128*-32 = 2048;
		// element 255: 0.5*127*31 = 1968.5; element 254: 0.5*127*-32 = -2032.
		checkAll(t, "Q6_K", []float32{got[0], got[1], got[255], got[254]}, []float32{-1984, 2048, 1968.5, -2032})
	})
}

// --- Pattern cases: every element position, random codes and scales.
//
// ggml evaluates each formula in float32, but every product in it is exact
// (at most 11 bits of f16 mantissa times a 6-bit scale times a 6-bit code fit
// float32's 24 bits), so the only rounding is that of the final sum. The
// expectation is therefore the exact value rounded once to float32, which
// exact() computes with math/big, independently of any evaluation order.

// exact returns a*b*c + d*e rounded once to the nearest float32.
func exact(a, b, c, d, e float64) float32 {
	p := new(big.Float).SetPrec(256).SetFloat64(a)
	p.Mul(p, new(big.Float).SetFloat64(b))
	p.Mul(p, new(big.Float).SetFloat64(c))
	q := new(big.Float).SetPrec(256).SetFloat64(d)
	q.Mul(q, new(big.Float).SetFloat64(e))
	p.Add(p, q)
	f, _ := p.Float32()
	return f
}

// exactProduct returns a*b*c rounded once to the nearest float32 (with its
// sign when zero: there is no sum to turn -0 into +0).
func exactProduct(a, b, c float64) float32 {
	p := new(big.Float).SetPrec(256).SetFloat64(a)
	p.Mul(p, new(big.Float).SetFloat64(b))
	p.Mul(p, new(big.Float).SetFloat64(c))
	f, _ := p.Float32()
	return f
}

func randHalf(r *rand.Rand) uint16 {
	for {
		h := uint16(r.Uint32())
		if h&0x7c00 != 0x7c00 { // finite
			return h
		}
	}
}

func TestDequantizeFormulas(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	halves := []uint16{hOne, hThird, hTenth, hTiny, hSubMax, hNegTiny, hMax, hMinusOne}
	for iter := 0; iter < 200; iter++ {
		d, m := halves[iter%len(halves)], halves[(iter/len(halves))%len(halves)]
		if iter >= 64 {
			d, m = randHalf(r), randHalf(r)
		}
		fd, fm := F16ToF32(d), F16ToF32(m) // F16ToF32 is checked exhaustively in f16_test.go
		q := make([]int, 256)
		for i := range q {
			q[i] = r.IntN(256)
		}
		if iter%3 == 0 { // extremes
			for i := range q {
				q[i] = 255 * (i % 2)
			}
		}
		var sc, mn [8]int
		var sc6 [16]int8
		for j := range sc {
			sc[j], mn[j] = r.IntN(64), r.IntN(64)
		}
		for j := range sc6 {
			sc6[j] = int8(r.IntN(256))
		}
		if iter%3 == 0 {
			sc, mn = [8]int{63, 0, 63, 0, 63, 0, 63, 0}, [8]int{0, 63, 0, 63, 0, 63, 0, 63}
			sc6 = [16]int8{-128, 127, -1, 0, 1, -128, 127, 64, -64, 2, -2, 3, -3, 100, -100, 5}
		}

		blk := make([]byte, 34)
		put16(blk, d)
		want := make([]float32, 32)
		for e := 0; e < 32; e++ {
			blk[2+e] = byte(q[e])
			want[e] = exactProduct(float64(int8(q[e])), float64(fd), 1)
		}
		checkAll(t, "Q8_0", dequant(t, Q8_0, blk, 32), want)

		nib := make([]int, 32)
		for e := range nib {
			nib[e] = q[e] & 15
		}
		blk = make([]byte, 18)
		put16(blk, d)
		packNibbles32(blk[2:], nib)
		for e := range want {
			want[e] = exactProduct(float64(nib[e]-8), float64(fd), 1)
		}
		checkAll(t, "Q4_0", dequant(t, Q4_0, blk, 32), want)

		blk = make([]byte, 20)
		put16(blk, d)
		put16(blk[2:], m)
		packNibbles32(blk[4:], nib)
		for e := range want {
			want[e] = exact(float64(nib[e]), float64(fd), 1, float64(fm), 1)
		}
		checkAll(t, "Q4_1", dequant(t, Q4_1, blk, 32), want)

		five := make([]int, 32)
		for e := range five {
			five[e] = q[e] & 31
		}
		blk = make([]byte, 22)
		put16(blk, d)
		packQh32(blk[2:], five)
		packNibbles32(blk[6:], five)
		for e := range want {
			want[e] = exactProduct(float64(five[e]-16), float64(fd), 1)
		}
		checkAll(t, "Q5_0", dequant(t, Q5_0, blk, 32), want)

		blk = make([]byte, 24)
		put16(blk, d)
		put16(blk[2:], m)
		packQh32(blk[4:], five)
		packNibbles32(blk[8:], five)
		for e := range want {
			want[e] = exact(float64(five[e]), float64(fd), 1, float64(fm), 1)
		}
		checkAll(t, "Q5_1", dequant(t, Q5_1, blk, 32), want)

		want = make([]float32, 256)
		q4 := make([]int, 256)
		for e := range q4 {
			q4[e] = q[e] & 15
		}
		blk = make([]byte, 144)
		packQ4K(blk, d, m, sc, mn, q4)
		for e := range want {
			s := e / 32
			want[e] = exact(float64(fd), float64(sc[s]), float64(q4[e]), -float64(fm), float64(mn[s]))
		}
		checkAll(t, "Q4_K", dequant(t, Q4_K, blk, 256), want)

		q5 := make([]int, 256)
		for e := range q5 {
			q5[e] = q[e] & 31
		}
		blk = make([]byte, 176)
		packQ5K(blk, d, m, sc, mn, q5)
		for e := range want {
			s := e / 32
			want[e] = exact(float64(fd), float64(sc[s]), float64(q5[e]), -float64(fm), float64(mn[s]))
		}
		checkAll(t, "Q5_K", dequant(t, Q5_K, blk, 256), want)

		q6 := make([]int, 256)
		for e := range q6 {
			q6[e] = q[e] & 63
		}
		blk = make([]byte, 210)
		packQ6K(blk, d, sc6, q6)
		for e := range want {
			want[e] = exactProduct(float64(fd), float64(sc6[e/16]), float64(q6[e]-32))
		}
		checkAll(t, "Q6_K", dequant(t, Q6_K, blk, 256), want)
	}
}

// TestDequantizeRoundsSum: the sum q*d + m rounds to float32.
// 15 * (2047/2048) = 14.99267578125 exactly; adding 2^-24 needs 28 bits, and
// the nearest float32 (ulp 2^-20 here) is 14.99267578125 itself.
func TestDequantizeRoundsSum(t *testing.T) {
	blk := make([]byte, 20)
	put16(blk, 0x3bff) // 2047/2048
	put16(blk[2:], hTiny)
	blk[4] = 0x0f
	got := dequant(t, Q4_1, blk, 32)
	if got[0] != 14.99267578125 || got[1] != 0x1p-24 {
		t.Errorf("Q4_1: got %v, %v; want 14.99267578125, 2^-24", got[0], got[1])
	}
}

func TestDequantizeErrors(t *testing.T) {
	out := make([]float32, 32)
	if err := Dequantize(Q4_0, make([]byte, 17), out); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short Q4_0: %v, want ErrCorrupt", err)
	}
	if err := Dequantize(Q4_0, make([]byte, 18), make([]float32, 31)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("31 Q4_0 elements: %v, want ErrCorrupt", err)
	}
	if err := Dequantize(Q4_K, make([]byte, 144), out); !errors.Is(err, ErrCorrupt) {
		t.Errorf("32 Q4_K elements: %v, want ErrCorrupt", err)
	}
	for _, d := range []DType{Q8_K, Q8_1, I32, DType(99)} {
		if err := Dequantize(d, nil, nil); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Dequantize(%s): %v, want ErrUnsupported", d, err)
		}
	}
}
