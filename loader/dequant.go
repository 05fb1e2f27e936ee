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
}

// Dequantize expands src, holding len(dst) elements of type d, into dst. It
// follows ggml's reference dequantisation bit for bit.
func Dequantize(d DType, src []byte, dst []float32) error {
	need, err := d.Size(len(dst))
	if err != nil {
		return err
	}
	if len(src) != need {
		return fmt.Errorf("%w: %d %s elements need %d bytes, got %d", ErrCorrupt, len(dst), d, need, len(src))
	}
	switch d {
	case Q4, Q8:
		dequantPlanar(d, src, dst)
		return nil
	}
	f, ok := dequantizers[d]
	if !ok {
		return fmt.Errorf("%w: dequantising %s", ErrUnsupported, d)
	}
	f(src, dst)
	return nil
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

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

// Q8_0 block: f16 d, int8 qs[32]; x = d*q.
func dequantQ8_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*34:]
		d := F16ToF32(le16(blk))
		for j := 0; j < 32; j++ {
			dst[b*32+j] = float32(int8(blk[2+j])) * d
		}
	}
}

// Q4_0 block: f16 d, qs[16]; element j is the low nibble of qs[j], element
// j+16 the high nibble; x = d*(q-8).
func dequantQ4_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*18:]
		d := F16ToF32(le16(blk))
		for j := 0; j < 16; j++ {
			q := blk[2+j]
			dst[b*32+j] = float32(int(q&0xf)-8) * d
			dst[b*32+j+16] = float32(int(q>>4)-8) * d
		}
	}
}

// dequantPlanar expands the shard layouts: the quantised plane (Q4: 16 bytes
// per group in Q4_0's nibble order; Q8: 32 int8 per group), then the f16
// scale plane at a 4-byte-aligned offset.
func dequantPlanar(d DType, src []byte, dst []float32) {
	groups := len(dst) / 32
	qPer := 16
	if d == Q8 {
		qPer = 32
	}
	scales := src[align4(groups*qPer):]
	for g := 0; g < groups; g++ {
		s := F16ToF32(le16(scales[2*g:]))
		q := src[g*qPer:]
		out := dst[g*32 : g*32+32]
		if d == Q8 {
			for j := 0; j < 32; j++ {
				out[j] = float32(int8(q[j])) * s
			}
			continue
		}
		for j := 0; j < 16; j++ {
			out[j] = float32(int(q[j]&0xf)-8) * s
			out[j+16] = float32(int(q[j]>>4)-8) * s
		}
	}
}
