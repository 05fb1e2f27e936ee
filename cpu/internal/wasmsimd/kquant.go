package wasmsimd

// The K-quants' dequantisations (ggml's super-blocks of 256 weights, kept
// as they are): DQ2_K..DQ6_K(q, s, out, rows, K) write rows·K/256 blocks
// from q out as f32, each value computed as loader's dequantQ*K computes
// it (the sub-block's scale and min from the same f32 products, then
// d·q, minus the min where the format has one), so the bits are the same.
// s is unused. The scales are unpacked with scalar instructions, the
// weights 16 at a time.
const (
	DQ2_K = "dq2_k"
	DQ3_K = "dq3_k"
	DQ4_K = "dq4_k"
	DQ5_K = "dq5_k"
	DQ6_K = "dq6_k"
)

// kquantBlock is what a K-quant kernel's block body needs: the block at
// local q, the output at local out, and scratch.
type kquantBlock struct {
	f                *fn
	q, out           uint32
	h, em            uint32 // i32 scratch for f16At
	d, dmin          uint32 // f32: the block's scales
	dl, ml           uint32 // v128: a sub-block's scale and min, splatted
	v, w, hv, lo, hi uint32 // v128 scratch
}

// kquantKernel is a K-quant dequantisation kernel over blocks of
// blockBytes, body emitting one block's 256 values.
func kquantKernel(name string, blockBytes int32, body func(k *kquantBlock)) *fn {
	f := &fn{params: 5, name: name}
	const q, out, rows, K = 0, 2, 3, 4
	k := &kquantBlock{f: f, q: q, out: out}
	b := f.local(i32)
	k.h, k.em = f.local(i32), f.local(i32)
	k.d, k.dmin = f.local(f32), f.local(f32)
	k.dl, k.ml = f.local(v128), f.local(v128)
	k.v, k.w, k.hv, k.lo, k.hi = f.local(v128), f.local(v128), f.local(v128), f.local(v128), f.local(v128)
	f.block()
	f.get(rows).get(K).mul().i32c(8).shrU().tee(b).eqz().brIf(0)
	f.loop()
	{
		body(k)
		f.get(q).i32c(blockBytes).add().set(q)
		f.get(out).i32c(1024).add().set(out)
		f.get(b).i32c(1).sub().tee(b).brIf(0)
	}
	f.end()
	f.end()
	return f
}

// scales sets dl to d·sc and, with min, ml to dmin·m, each splatted, the
// scalars pushed by sc and m (i32) converted to f32 (signed when signed).
func (k *kquantBlock) scales(sc, m func(), signed bool) {
	f := k.f
	f.get(k.d)
	sc()
	if signed {
		f.f32FromI32S()
	} else {
		f.f32FromI32U()
	}
	f.f32Mul().f32Splat().set(k.dl)
	if m != nil {
		f.get(k.dmin)
		m()
		f.f32FromI32U().f32Mul().f32Splat().set(k.ml)
	}
}

// byteAt pushes the block's byte at off (unsigned).
func (k *kquantBlock) byteAt(off uint32) *fn { return k.f.get(k.q).load8U(off) }

// put16 stores the 16 int8 lanes of local v as f32 at element e of the
// block's output: dl·q, minus ml when sub.
func (k *kquantBlock) put16(e uint32, v uint32, sub bool) {
	f := k.f
	for i := range uint32(4) {
		f.get(k.out).get(v)
		if i < 2 {
			f.i16FromI8Low()
		} else {
			f.i16FromI8High()
		}
		if i%2 == 0 {
			f.i32FromI16Low()
		} else {
			f.i32FromI16High()
		}
		f.f32x4FromI32().get(k.dl).f32x4Mul()
		if sub {
			f.get(k.ml).f32x4Sub()
		}
		f.vStore(4*e + 16*i)
	}
}

// bits sets dst to (src >> shift) & mask, lane by lane (i8).
func (k *kquantBlock) bits(dst, src uint32, shift, mask int32) {
	f := k.f
	f.get(src)
	if shift > 0 {
		f.i32c(shift).i8ShrU()
	}
	f.i32c(mask).i8Splat().vAnd().set(dst)
}

// scaleMinK4 pushes sub-block j's 6-bit scale (or, with min, its min)
// from the 12 bytes at off, as loader's scaleMinK4.
func (k *kquantBlock) scaleMinK4(off uint32, j int, min bool) func() {
	return func() {
		switch {
		case j < 4 && !min:
			k.byteAt(off + uint32(j)).i32c(63).and()
		case j < 4:
			k.byteAt(off + uint32(j) + 4).i32c(63).and()
		case !min:
			k.byteAt(off + uint32(j) + 4).i32c(0xf).and()
			k.byteAt(off + uint32(j) - 4).i32c(6).shrU().i32c(4).shl().or()
		default:
			k.byteAt(off + uint32(j) + 4).i32c(4).shrU()
			k.byteAt(off + uint32(j)).i32c(6).shrU().i32c(4).shl().or()
		}
	}
}

// q45K is Q4_K's block (high false) or Q5_K's: f16 d and dmin, 12 bytes of
// scales, Q5_K's 32 bytes of fifth bits, 128 bytes of nibbles.
func q45K(high bool) func(k *kquantBlock) {
	return func(k *kquantBlock) {
		f := k.f
		f.f16At(k.q, 0, k.h, k.em).set(k.d)
		f.f16At(k.q, 2, k.h, k.em).set(k.dmin)
		qs := uint32(16)
		if high {
			qs = 48
		}
		for i := range 4 {
			for half := range uint32(2) { // elements 16·half.. of each 32
				f.get(k.q).vLoad(qs + 32*uint32(i) + 16*half).set(k.v)
				if high {
					f.get(k.q).vLoad(16 + 16*half).set(k.hv)
				}
				for n, nib := range []uint32{k.lo, k.hi} {
					sub := 2*i + n
					k.scales(k.scaleMinK4(4, sub, false), k.scaleMinK4(4, sub, true), false)
					if n == 0 {
						k.bits(nib, k.v, 0, 0xf)
					} else {
						k.bits(nib, k.v, 4, 0xf)
					}
					if high {
						k.bits(k.w, k.hv, int32(sub), 1)
						f.get(nib).get(k.w).i32c(4).i8Shl().vOr().set(nib)
					}
					k.put16(uint32(64*i+32*n)+16*half, nib, true)
				}
			}
		}
	}
}

// q6K is Q6_K's block: 128 bytes of low nibbles, 64 of top bits, 16
// int8 scales, f16 d.
func q6K(k *kquantBlock) {
	f := k.f
	f.f16At(k.q, 208, k.h, k.em).set(k.d)
	for h := range uint32(2) {
		for c := range uint32(2) { // l = 16c..16c+15
			f.get(k.q).vLoad(64*h + 16*c).set(k.v)      // ql[l]
			f.get(k.q).vLoad(64*h + 32 + 16*c).set(k.w) // ql[l+32]
			f.get(k.q).vLoad(128 + 32*h + 16*c).set(k.hv)
			for n := range uint32(4) {
				src, shift := k.v, int32(0)
				if n%2 == 1 {
					src = k.w
				}
				if n >= 2 {
					shift = 4
				}
				k.bits(k.lo, src, shift, 0xf)
				k.bits(k.hi, k.hv, int32(2*n), 3)
				f.get(k.lo).get(k.hi).i32c(4).i8Shl().vOr().i32c(32).i8Splat().i8Sub().set(k.lo)
				k.scales(func() { f.get(k.q).load8S(192 + 8*h + c + 2*n) }, nil, true)
				k.put16(128*h+32*n+16*c, k.lo, false)
			}
		}
	}
}

// q2K is Q2_K's block: 16 bytes of 4-bit scales and mins, 64 bytes of
// 2-bit weights, f16 d and dmin.
func q2K(k *kquantBlock) {
	f := k.f
	f.f16At(k.q, 80, k.h, k.em).set(k.d)
	f.f16At(k.q, 82, k.h, k.em).set(k.dmin)
	is := uint32(0)
	for h := range uint32(2) {
		for j := range uint32(4) {
			for half := range uint32(2) {
				sc := is
				k.scales(func() { k.byteAt(sc).i32c(0xf).and() }, func() { k.byteAt(sc).i32c(4).shrU() }, false)
				is++
				f.get(k.q).vLoad(16 + 32*h + 16*half).set(k.v)
				k.bits(k.lo, k.v, int32(2*j), 3)
				k.put16(128*h+32*j+16*half, k.lo, true)
			}
		}
	}
}

// q3K is Q3_K's block: 32 bytes of third bits, 64 of 2-bit weights, 12
// bytes of 6-bit scales, f16 d.
func q3K(k *kquantBlock) {
	f := k.f
	f.f16At(k.q, 108, k.h, k.em).set(k.d)
	is := 0
	for h := range 2 {
		for j := range 4 {
			for half := range uint32(2) {
				s := is
				k.scales(func() { // scaleQ3K(s): lo | hi<<4, minus 32
					k.byteAt(96 + uint32(s%8))
					if s >= 8 {
						f.i32c(4).shrU()
					} else {
						f.i32c(0xf).and()
					}
					k.byteAt(96 + 8 + uint32(s%4)).i32c(int32(2 * (s / 4))).shrU().i32c(3).and().i32c(4).shl().or()
					f.i32c(32).sub()
				}, nil, true)
				is++
				f.get(k.q).vLoad(32 + 32*uint32(h) + 16*half).set(k.v)
				k.bits(k.lo, k.v, int32(2*j), 3)
				f.get(k.q).vLoad(16 * half).set(k.hv)
				k.bits(k.hi, k.hv, int32(4*h+j), 1)
				f.get(k.lo).get(k.hi).i32c(2).i8Shl().i8Add().i32c(4).i8Splat().i8Sub().set(k.lo)
				k.put16(uint32(128*h+32*j)+16*half, k.lo, false)
			}
		}
	}
}

// kquantKernels are the K-quants' dequantisation kernels, in Op order
// (OpDQ2_K..OpDQ6_K).
func kquantKernels() []*fn {
	return []*fn{
		kquantKernel(DQ2_K, 84, q2K),
		kquantKernel(DQ3_K, 110, q3K),
		kquantKernel(DQ4_K, 144, q45K(false)),
		kquantKernel(DQ5_K, 176, q45K(true)),
		kquantKernel(DQ6_K, 210, q6K),
	}
}
