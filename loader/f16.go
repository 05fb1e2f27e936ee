package loader

import "math"

// F16ToF32 converts an IEEE half-precision value to float32 exactly.
func F16ToF32(h uint16) float32 {
	if e := h & 0x7c00; e != 0 && e != 0x7c00 { // normal: rebias the exponent by 127-15
		return math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)+(127-15)<<10)<<13)
	}
	return f16Special(h)
}

// f16Special converts zeros, subnormals, infinities and NaNs.
func f16Special(h uint16) float32 {
	sign := uint32(h>>15) << 31
	mant := uint32(h) & 0x3ff
	switch {
	case h&0x7c00 == 0x7c00:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	e := uint32(127 - 15 + 1) // subnormal: normalise
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// F32ToF16 converts float32 to half precision, rounding to nearest even.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		rest := mant & (1<<shift - 1)
		m := mant >> shift
		if rest > half || (rest == half && m&1 == 1) {
			m++
		}
		return sign | uint16(m)
	}
	m := mant >> 13
	rest := mant & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && m&1 == 1) {
		m++
		if m == 0x400 {
			m = 0
			e++
			if e >= 0x1f {
				return sign | 0x7c00
			}
		}
	}
	return sign | uint16(e)<<10 | uint16(m)
}

// BF16ToF32 widens a bfloat16 value.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 narrows float32 to bfloat16, rounding to nearest even; NaNs stay
// NaN (quietened), as ggml's and PyTorch's conversions do.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}
