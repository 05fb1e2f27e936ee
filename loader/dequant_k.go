package loader

// K-quants: super-blocks of 256 elements (ggml's QK_K).

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) from the
// 12-byte scales field of Q4_K and Q5_K (ggml's get_scale_min_k4): sub-blocks
// 0-3 keep theirs in the low 6 bits of bytes j and j+4; sub-blocks 4-7 keep
// the low 4 bits in the nibbles of byte j+4 and the top 2 bits in the top
// bits of bytes j-4 (scale) and j (min).
func scaleMinK4(j int, s []byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// Q4_K block (144 bytes): f16 d, f16 dmin, scales[12], qs[128]. Each 64
// elements share 32 bytes of qs: the first 32 elements are the low nibbles,
// the next 32 the high nibbles, with sub-block scales 2i and 2i+1;
// x = (d*sc)*q - dmin*m.
func dequantQ4K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*144 : b*144+144]
		d, dmin := f16at(blk), f16at(blk[2:])
		scales := blk[4:16]
		qs := blk[16:144]
		out := dst[b*256 : b*256+256]
		for i := 0; i < 4; i++ {
			sc1, m1 := scaleMinK4(2*i, scales)
			sc2, m2 := scaleMinK4(2*i+1, scales)
			d1, mn1 := d*float32(sc1), dmin*float32(m1)
			d2, mn2 := d*float32(sc2), dmin*float32(m2)
			q := qs[32*i : 32*i+32]
			o := out[64*i : 64*i+64]
			for l := 0; l < 32; l++ {
				o[l] = float32(d1*float32(q[l]&0xf)) - mn1
				o[32+l] = float32(d2*float32(q[l]>>4)) - mn2
			}
		}
	}
}

// Q5_K block (176 bytes): f16 d, f16 dmin, scales[12], qh[32], qs[128]. As
// Q4_K, plus a fifth bit: element l of 64-element group i takes bit 2i of
// qh[l] (low nibble) or bit 2i+1 (high nibble).
func dequantQ5K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*176 : b*176+176]
		d, dmin := f16at(blk), f16at(blk[2:])
		scales := blk[4:16]
		qh := blk[16:48]
		qs := blk[48:176]
		out := dst[b*256 : b*256+256]
		for i := 0; i < 4; i++ {
			sc1, m1 := scaleMinK4(2*i, scales)
			sc2, m2 := scaleMinK4(2*i+1, scales)
			d1, mn1 := d*float32(sc1), dmin*float32(m1)
			d2, mn2 := d*float32(sc2), dmin*float32(m2)
			q := qs[32*i : 32*i+32]
			o := out[64*i : 64*i+64]
			for l := 0; l < 32; l++ {
				lo := q[l]&0xf | (qh[l]>>(2*i)&1)<<4
				hi := q[l]>>4 | (qh[l]>>(2*i+1)&1)<<4
				o[l] = float32(d1*float32(lo)) - mn1
				o[32+l] = float32(d2*float32(hi)) - mn2
			}
		}
	}
}

// Q6_K block (210 bytes): ql[128], qh[64], int8 scales[16], f16 d. Each half
// of 128 elements uses 64 bytes of ql, 32 of qh and 8 scales. Its element
// 32k+l (k = 0..3, l = 0..31) takes the low 4 bits from the low (k < 2) or
// high (k >= 2) nibble of ql[l] (k even) or ql[l+32] (k odd), the top 2 bits
// from bits 2k, 2k+1 of qh[l], and scale 2k + l/16; x = (d*sc)*(q-32).
func dequantQ6K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*210 : b*210+210]
		d := f16at(blk[208:])
		out := dst[b*256 : b*256+256]
		for h := 0; h < 2; h++ {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 128+32*h+32]
			sc := blk[192+8*h : 192+8*h+8]
			o := out[128*h : 128*h+128]
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
				q2 := int(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				o[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				o[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				o[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				o[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
	}
}

// Q2_K block (84 bytes): scales[16], qs[64], f16 d, f16 dmin. Each 16
// elements have a 4-bit scale (low nibble) and min (high nibble); each half
// of 128 elements uses 32 bytes of qs, element 32j+l (j = 0..3) taking bits
// 2j, 2j+1 of qs[l]; x = (d*sc)*q - (dmin*m).
func dequantQ2K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*84 : b*84+84]
		d, dmin := f16at(blk[80:]), f16at(blk[82:])
		out := dst[b*256 : b*256+256]
		is := 0
		for h := 0; h < 2; h++ {
			q := blk[16+32*h : 16+32*h+32]
			for j := 0; j < 4; j++ {
				shift := 2 * j
				for half := 0; half < 2; half++ {
					sc := blk[is]
					is++
					dl, ml := d*float32(sc&0xf), dmin*float32(sc>>4)
					o := out[128*h+32*j+16*half:]
					for l := 0; l < 16; l++ {
						o[l] = float32(dl*float32(q[16*half+l]>>shift&3)) - ml
					}
				}
			}
		}
	}
}

// scaleQ3K unpacks the 6-bit scale k (0..15) of a Q3_K block's 12-byte
// scales field, as ggml's dequantize_row_q3_K does with its aux words: the
// low 4 bits are the low (k < 8) or high nibble of byte k%8, the top 2 bits
// are bits 2(k/4), 2(k/4)+1 of byte 8+k%4; the scale is that minus 32.
func scaleQ3K(k int, s []byte) int8 {
	lo := s[k%8] & 0xf
	if k >= 8 {
		lo = s[k%8] >> 4
	}
	hi := s[8+k%4] >> (2 * (k / 4)) & 3
	return int8(lo|hi<<4) - 32
}

// Q3_K block (110 bytes): hmask[32], qs[64], scales[12], f16 d. Element
// 128h+32j+l (l = 0..31) takes its low 2 bits from bits 2j, 2j+1 of
// qs[32h+l] and its third bit from bit 4h+j of hmask[l] (set: +0, clear:
// -4); each 16 elements have a 6-bit signed scale; x = (d*sc)*q.
func dequantQ3K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*110 : b*110+110]
		d := f16at(blk[108:])
		hm := blk[:32]
		scales := blk[96:108]
		out := dst[b*256 : b*256+256]
		is := 0
		for h := 0; h < 2; h++ {
			q := blk[32+32*h : 32+32*h+32]
			for j := 0; j < 4; j++ {
				shift, m := 2*j, byte(1)<<(4*h+j)
				for half := 0; half < 2; half++ {
					dl := d * float32(scaleQ3K(is, scales))
					is++
					o := out[128*h+32*j+16*half:]
					for l := 0; l < 16; l++ {
						i := 16*half + l
						v := int8(q[i] >> shift & 3)
						if hm[i]&m == 0 {
							v -= 4
						}
						o[l] = dl * float32(v)
					}
				}
			}
		}
	}
}

// ScaleMinK4 is the 6-bit scale and min of sub-block j (0..7) of a Q4_K or
// Q5_K block's 12-byte scales field (ggml's get_scale_min_k4), for the
// kernels that read K-quant blocks in place.
func ScaleMinK4(j int, scales []byte) (sc, m uint8) { return scaleMinK4(j, scales) }

// ScaleQ3K is the signed scale k (0..15, already minus 32) of a Q3_K block's
// 12-byte scales field.
func ScaleQ3K(k int, scales []byte) int8 { return scaleQ3K(k, scales) }
