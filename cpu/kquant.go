package cpu

import "wasmllm/loader"

// Dot products of one row of K-quant blocks (ggml's layouts, kept as they
// are; see loader/dequant_k.go for each block's fields) with x (K). Each
// sub-block's scale (and min) is applied once to its partial sums, so the
// result is the dequantised row's dot product up to f32 rounding; DotKQuant
// in ref.go is the plain-loop definition.

func dotQ2K(q []byte, x []float32) float32 {
	var sum float32
	for b := 0; b < len(x)/256; b++ {
		blk := q[b*84 : b*84+84]
		d, dmin := f16(blk[80:]), f16(blk[82:])
		xs := x[b*256 : b*256+256]
		is := 0
		for h := 0; h < 2; h++ {
			qs := blk[16+32*h : 16+32*h+32]
			for j := 0; j < 4; j++ {
				shift := 2 * j
				for half := 0; half < 2; half++ {
					sc := blk[is]
					is++
					xv := xs[128*h+32*j+16*half : 128*h+32*j+16*half+16]
					qv := qs[16*half : 16*half+16]
					var sq, sx float32
					for l, v := range xv {
						sq += float32(qv[l]>>shift&3) * v
						sx += v
					}
					sum += d*float32(sc&0xf)*sq - dmin*float32(sc>>4)*sx
				}
			}
		}
	}
	return sum
}

func dotQ3K(q []byte, x []float32) float32 {
	var sum float32
	for b := 0; b < len(x)/256; b++ {
		blk := q[b*110 : b*110+110]
		d := f16(blk[108:])
		hm, scales := blk[:32], blk[96:108]
		xs := x[b*256 : b*256+256]
		is := 0
		for h := 0; h < 2; h++ {
			qs := blk[32+32*h : 32+32*h+32]
			for j := 0; j < 4; j++ {
				shift, m := 2*j, byte(1)<<(4*h+j)
				for half := 0; half < 2; half++ {
					sc := loader.ScaleQ3K(is, scales)
					is++
					xv := xs[128*h+32*j+16*half : 128*h+32*j+16*half+16]
					o := 16 * half
					var sq float32
					for l, v := range xv {
						qv := int(qs[o+l] >> shift & 3)
						if hm[o+l]&m == 0 {
							qv -= 4
						}
						sq += float32(qv) * v
					}
					sum += d * float32(sc) * sq
				}
			}
		}
	}
	return sum
}

func dotQ4K(q []byte, x []float32) float32 {
	var sum float32
	for b := 0; b < len(x)/256; b++ {
		blk := q[b*144 : b*144+144]
		d, dmin := f16(blk), f16(blk[2:])
		scales, qs := blk[4:16], blk[16:144]
		xs := x[b*256 : b*256+256]
		for i := 0; i < 4; i++ {
			sc1, m1 := loader.ScaleMinK4(2*i, scales)
			sc2, m2 := loader.ScaleMinK4(2*i+1, scales)
			qv := qs[32*i : 32*i+32]
			xl, xh := xs[64*i:64*i+32], xs[64*i+32:64*i+64]
			var s1, s2, x1, x2 float32
			for l := 0; l < 32; l++ {
				s1 += float32(qv[l]&0xf) * xl[l]
				s2 += float32(qv[l]>>4) * xh[l]
				x1 += xl[l]
				x2 += xh[l]
			}
			sum += d*(float32(sc1)*s1+float32(sc2)*s2) - dmin*(float32(m1)*x1+float32(m2)*x2)
		}
	}
	return sum
}

func dotQ5K(q []byte, x []float32) float32 {
	var sum float32
	for b := 0; b < len(x)/256; b++ {
		blk := q[b*176 : b*176+176]
		d, dmin := f16(blk), f16(blk[2:])
		scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
		xs := x[b*256 : b*256+256]
		for i := 0; i < 4; i++ {
			sc1, m1 := loader.ScaleMinK4(2*i, scales)
			sc2, m2 := loader.ScaleMinK4(2*i+1, scales)
			qv := qs[32*i : 32*i+32]
			xl, xh := xs[64*i:64*i+32], xs[64*i+32:64*i+64]
			var s1, s2, x1, x2 float32
			for l := 0; l < 32; l++ {
				lo := qv[l]&0xf | (qh[l]>>(2*i)&1)<<4
				hi := qv[l]>>4 | (qh[l]>>(2*i+1)&1)<<4
				s1 += float32(lo) * xl[l]
				s2 += float32(hi) * xh[l]
				x1 += xl[l]
				x2 += xh[l]
			}
			sum += d*(float32(sc1)*s1+float32(sc2)*s2) - dmin*(float32(m1)*x1+float32(m2)*x2)
		}
	}
	return sum
}

func dotQ6K(q []byte, x []float32) float32 {
	var sum float32
	for b := 0; b < len(x)/256; b++ {
		blk := q[b*210 : b*210+210]
		d := f16(blk[208:])
		xs := x[b*256 : b*256+256]
		for h := 0; h < 2; h++ {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 128+32*h+32]
			sc := blk[192+8*h : 192+8*h+8]
			xv := xs[128*h : 128*h+128]
			var s [8]float32 // per scale: sub-block k (0..3) of 32, halves of 16
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int(ql[l]&0xf|(qh[l]&3)<<4) - 32
				q2 := int(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				s[is] += float32(q1) * xv[l]
				s[is+2] += float32(q2) * xv[l+32]
				s[is+4] += float32(q3) * xv[l+64]
				s[is+6] += float32(q4) * xv[l+96]
			}
			var t float32
			for k, v := range s {
				t += float32(int8(sc[k])) * v
			}
			sum += d * t
		}
	}
	return sum
}
