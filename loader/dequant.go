package loader

import (
	"encoding/binary"
	"fmt"
	"math"
)

// dequantizer expands whole blocks of src into dst; len(dst) is a multiple of
// the block size and len(src) matches it exactly.
type dequantizer func(src []byte, dst []float32)

var dequantizers = map[DType]dequantizer{
	F32:  dequantF32,
	F16:  dequantF16,
	BF16: dequantBF16,
	Q8_0: dequantQ8_0,
	Q4_0: dequantQ4_0,
	Q4_1: dequantQ4_1,
	Q5_0: dequantQ5_0,
	Q5_1: dequantQ5_1,
	Q2_K: dequantQ2K,
	Q3_K: dequantQ3K,
	Q4_K: dequantQ4K,
	Q5_K: dequantQ5K,
	Q6_K: dequantQ6K,
	Q4:   func(src []byte, dst []float32) { dequantPlanar(Q4, src, dst) },
	Q8:   func(src []byte, dst []float32) { dequantPlanar(Q8, src, dst) },
}

// CanDequantize reports whether Dequantize supports d.
func CanDequantize(d DType) bool { _, ok := dequantizers[d]; return ok }

// Dequantize expands src, holding len(dst) elements of type d, into dst. It
// follows ggml's reference dequantisation (dequantize_row_* in
// ggml-quants.c) bit for bit, rounding every product and sum to float32 as
// that C code does without floating-point contraction.
func Dequantize(d DType, src []byte, dst []float32) error {
	f, ok := dequantizers[d]
	if !ok {
		return fmt.Errorf("%w: dequantising %s", ErrUnsupported, d)
	}
	need, err := d.Size(len(dst))
	if err != nil {
		return err
	}
	if len(src) != need {
		return fmt.Errorf("%w: %d %s elements need %d bytes, got %d", ErrCorrupt, len(dst), d, need, len(src))
	}
	f(src, dst)
	return nil
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

func f16at(b []byte) float32 { return F16ToF32(le16(b)) }

func dequantF32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func dequantF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = F16ToF32(le16(src[2*i:]))
	}
}

func dequantBF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = BF16ToF32(le16(src[2*i:]))
	}
}

// Q8_0 block (34 bytes): f16 d, int8 qs[32]; x = q*d.
func dequantQ8_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*34 : b*34+34]
		d := f16at(blk)
		out := dst[b*32 : b*32+32]
		for j := range out {
			out[j] = float32(int8(blk[2+j])) * d
		}
	}
}

// Q4_0 block (18 bytes): f16 d, qs[16]. Element j is the low nibble of
// qs[j], element j+16 the high nibble; x = (q-8)*d.
func dequantQ4_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*18 : b*18+18]
		d := f16at(blk)
		out := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[2+j]
			out[j] = float32(int(q&0xf)-8) * d
			out[j+16] = float32(int(q>>4)-8) * d
		}
	}
}

// Q4_1 block (20 bytes): f16 d, f16 m, qs[16] in Q4_0's nibble order;
// x = q*d + m.
func dequantQ4_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*20 : b*20+20]
		d, m := f16at(blk), f16at(blk[2:])
		out := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[4+j]
			out[j] = float32(float32(q&0xf)*d) + m
			out[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

// Q5_0 block (22 bytes): f16 d, u32 qh, qs[16]. Element j's fifth bit is
// bit j of qh (j+16: bit j+16); x = (q-16)*d.
func dequantQ5_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*22 : b*22+22]
		d := f16at(blk)
		qh := binary.LittleEndian.Uint32(blk[2:])
		out := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[6+j]
			lo := int(q&0xf) | int(qh>>j&1)<<4
			hi := int(q>>4) | int(qh>>(j+16)&1)<<4
			out[j] = float32(lo-16) * d
			out[j+16] = float32(hi-16) * d
		}
	}
}

// Q5_1 block (24 bytes): f16 d, f16 m, u32 qh, qs[16]; bits as Q5_0;
// x = q*d + m.
func dequantQ5_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*24 : b*24+24]
		d, m := f16at(blk), f16at(blk[2:])
		qh := binary.LittleEndian.Uint32(blk[4:])
		out := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[8+j]
			lo := q&0xf | uint8(qh>>j&1)<<4
			hi := q>>4 | uint8(qh>>(j+16)&1)<<4
			out[j] = float32(float32(lo)*d) + m
			out[j+16] = float32(float32(hi)*d) + m
		}
	}
}
