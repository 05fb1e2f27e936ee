package loader

import (
	"encoding/binary"
	"fmt"
	"math"
)

// QuantizeQ8_0 quantises src (a multiple of 32 values) to Q8_0 blocks exactly
// as ggml's quantize_row_q8_0_ref, which llama-quantize uses: d = amax/127,
// q = round(x/d) with ties away from zero.
func QuantizeQ8_0(src []float32) ([]byte, error) {
	if len(src)%32 != 0 {
		return nil, fmt.Errorf("%w: %d values is not a multiple of the Q8_0 block size 32", ErrCorrupt, len(src))
	}
	out := make([]byte, len(src)/32*34)
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := out[b*34 : b*34+34]
		var amax float32
		for _, v := range x {
			amax = max32(amax, abs32(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		for j, v := range x {
			blk[2+j] = byte(int8(math.Round(float64(v * id))))
		}
	}
	return out, nil
}

// QuantizeQ4_0 quantises src (a multiple of 32 values) to Q4_0 blocks exactly
// as ggml's quantize_row_q4_0_ref: d = -max/8 where max is the value of
// largest magnitude (the first one on ties), q = min(15, trunc(x/d + 8.5)).
func QuantizeQ4_0(src []float32) ([]byte, error) {
	if len(src)%32 != 0 {
		return nil, fmt.Errorf("%w: %d values is not a multiple of the Q4_0 block size 32", ErrCorrupt, len(src))
	}
	out := make([]byte, len(src)/32*18)
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := out[b*18 : b*18+18]
		var amax, mx float32
		for _, v := range x {
			if amax < abs32(v) {
				amax, mx = abs32(v), v
			}
		}
		d := mx / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		for j := 0; j < 16; j++ {
			blk[2+j] = q4nibble(x[j]*id) | q4nibble(x[j+16]*id)<<4
		}
	}
	return out, nil
}

// q4nibble is ggml's MIN(15, (int8_t)(x + 8.5f)).
func q4nibble(x float32) byte {
	v := x + 8.5
	if !(v > -1 && v < 16) { // NaN, or out of int8's truncation range of interest
		if v >= 16 {
			return 15
		}
		return 0
	}
	return byte(int8(v))
}

// Quantize encodes src as dtype d for the types the converter writes: F32,
// F16, BF16 (round to nearest even), Q8_0 and Q4_0.
func Quantize(d DType, src []float32) ([]byte, error) {
	switch d {
	case Q8_0:
		return QuantizeQ8_0(src)
	case Q4_0:
		return QuantizeQ4_0(src)
	case F32:
		out := make([]byte, 4*len(src))
		for i, v := range src {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
		return out, nil
	case F16, BF16:
		out := make([]byte, 2*len(src))
		for i, v := range src {
			h := F32ToF16(v)
			if d == BF16 {
				h = F32ToBF16(v)
			}
			binary.LittleEndian.PutUint16(out[2*i:], h)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: quantising to %s", ErrUnsupported, d)
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// max32 is C's MAX(a, b) macro: b unless a > b (so a NaN b wins).
func max32(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}
