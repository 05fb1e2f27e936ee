package wasmsimd

// The kernels. Pointers are byte offsets into the imported memory; K is a
// multiple of 32 for the quantised kernels and of 4 for F32.
//
//	F32(w, x, out, rows, K, T, ldo)   out[t*ldo+r] = w[r] · x[t]   w (rows, K) f32, x (T, K) f32
//	Q8_0(w, x, out, rows, K)          out[r] = w[r] · x            w (rows, K/32) blocks of 34 bytes
//	Q4_0(w, x, out, rows, K)          the same with blocks of 18 bytes
//	Q8(q, s, x, out, rows, K)         planar: q (rows, K) int8, s (rows, K/32) f16 scales
//	Q4(q, s, x, out, rows, K)         planar: q (rows, K/2) nibbles, s as Q8's
//
// Export names are the kernels' names.
const (
	F32  = "f32"
	Q8_0 = "q8_0"
	Q4_0 = "q4_0"
	Q8   = "q8"
	Q4   = "q4"
	// Exp(p, n) sets p[i] = e^p[i] for i < n (f32, in place), as cpu.expf.
	Exp = "exp"
	// Silu(out, gateUp, T, F) is cpu.siluMul's first F&^3 columns.
	Silu = "silu"
	// Batch(table, n) makes n kernel calls, each from 8 i32 of the table:
	// an Op, then the kernel's arguments (F32's seven, a GEMV's five or
	// six, a dequantisation's five), so a matmul's tiles or a prompt's
	// MoE experts go in one call from Go.
	Batch = "batch"
)

// Dequantisations, callable through Batch (and exported for tests):
//
//	DQ*(q, s, out, rows, K)   out (rows, K) f32 = the weights, as loader's dequantisation
//
// s is the scales' plane for the planar types and ignored for ggml's
// blocks.
const (
	DQ8_0 = "dq8_0"
	DQ4_0 = "dq4_0"
	DQ8   = "dq8"
	DQ4   = "dq4"
)

// Op is a Batch entry's kernel.
type Op int32

const (
	OpF32 Op = iota
	OpQ8_0
	OpQ4_0
	OpQ8
	OpQ4
	OpDQ8_0
	OpDQ4_0
	OpDQ8
	OpDQ4
	OpDQ2_K
	OpDQ3_K
	OpDQ4_K
	OpDQ5_K
	OpDQ6_K
	numOps
)

// opArgs is how many of an entry's seven arguments each Op's kernel takes;
// an Op is also its kernel's index in the module.
var opArgs = [numOps]int{7, 5, 5, 6, 6, 5, 5, 5, 5, 5, 5, 5, 5, 5}

// Module returns the module's bytes.
func Module() []byte {
	// The first numOps functions are the Ops' kernels, in Op order.
	fns := []*fn{f32Kernel(), blockKernel(Q8_0, false, 8), blockKernel(Q4_0, false, 4), blockKernel(Q8, true, 8), blockKernel(Q4, true, 4),
		dequantKernel(DQ8_0, false, 8), dequantKernel(DQ4_0, false, 4), dequantKernel(DQ8, true, 8), dequantKernel(DQ4, true, 4)}
	fns = append(fns, kquantKernels()...)
	return module(append(fns, attnKernel(), expArrayKernel(), siluKernel(), deltaStepKernel(), batchKernel()))
}

// hsum replaces the f32x4 in local v by (v0 + v1) + (v2 + v3) on the stack.
func (f *fn) hsum(v uint32) *fn {
	f.get(v).f32Lane(0).get(v).f32Lane(1).f32Add()
	f.get(v).f32Lane(2).get(v).f32Lane(3).f32Add()
	return f.f32Add()
}

// accMul adds a*b to the f32x4 in local acc, with the two operands
// emitted by a and b.
func (f *fn) accMul(acc uint32, a, b func()) *fn {
	f.get(acc)
	a()
	b()
	f.f32x4Mul().f32x4Add().set(acc)
	return f
}

// f16At pushes the f32 value of the f16 at p+off (exact, as
// loader.F16ToF32), using the i32 locals h and em.
func (f *fn) f16At(p, off, h, em uint32) *fn {
	f.get(p).load16U(off).set(h)
	f.get(h).i32c(0x7fff).and().set(em)
	// subnormal: em * 2^-24, exact
	f.get(em).f32FromI32U().f32c(0x33800000).f32Mul().f32AsI32()
	// inf/nan: the mantissa under an all-ones exponent
	f.get(em).i32c(13).shl().i32c(0x7f800000).or()
	// normal: rebias the exponent
	f.get(em).i32c(13).shl().i32c(0x38000000).add()
	f.get(em).i32c(0x7c00).geU().sel() // inf/nan or normal
	f.get(em).i32c(0x400).ltU().sel()  // subnormal or that
	f.get(h).i32c(0x8000).and().i32c(16).shl().or()
	return f.i32AsF32()
}

// f32Kernel is cpu.gemmF32: four tokens at a time (each weight vector
// loaded once for four dot products, each in the order of one), the rows
// the inner loop.
func f32Kernel() *fn {
	f := &fn{params: 7, name: F32}
	const w, x, out, rows, K, T, ldo = 0, 1, 2, 3, 4, 5, 6
	wp, xt, wr, o, r, t, k, rowBytes, ldoBytes := f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32)
	var xs [4]uint32
	var accs [4]uint32
	for i := range 4 {
		xs[i] = f.local(i32)
	}
	for i := range 4 {
		accs[i] = f.local(v128)
	}
	wv := f.local(v128)
	f.block()
	f.get(rows).op(0x45).brIf(0) // rows == 0
	f.get(T).op(0x45).brIf(0)
	f.get(K).i32c(2).shl().set(rowBytes)
	f.get(ldo).i32c(2).shl().set(ldoBytes)
	f.get(x).set(xt)
	f.get(T).set(t)
	// Groups of four tokens.
	f.block()
	f.loop()
	{
		f.get(t).i32c(4).ltU().brIf(1)
		f.get(w).set(wr)
		f.get(out).set(o)
		f.get(rows).set(r)
		f.loop() // rows
		{
			for i := range 4 {
				f.vZero().set(accs[i])
				f.get(xt)
				if i > 0 {
					f.get(rowBytes).i32c(int32(i)).mul().add()
				}
				f.set(xs[i])
			}
			f.get(wr).set(wp)
			f.get(K).i32c(2).shrU().set(k)
			f.loop()
			{
				f.get(wp).vLoad(0).set(wv)
				for i := range 4 {
					f.accMul(accs[i], func() { f.get(wv) }, func() { f.get(xs[i]).vLoad(0) })
					f.get(xs[i]).i32c(16).add().set(xs[i])
				}
				f.get(wp).i32c(16).add().set(wp)
				f.get(k).i32c(1).sub().tee(k).brIf(0)
			}
			f.end()
			for i := range 4 {
				f.get(o)
				if i > 0 {
					f.get(ldoBytes).i32c(int32(i)).mul().add()
				}
				f.hsum(accs[i]).f32Store(0)
			}
			f.get(wp).set(wr)
			f.get(o).i32c(4).add().set(o)
			f.get(r).i32c(1).sub().tee(r).brIf(0)
		}
		f.end()
		f.get(xt).get(rowBytes).i32c(2).shl().add().set(xt)
		f.get(out).get(ldoBytes).i32c(2).shl().add().set(out)
		f.get(t).i32c(4).sub().set(t)
		f.op(0x0c).u32(0) // br: the next four
	}
	f.end()
	f.end()
	// The rest, one token at a time.
	f.get(t).op(0x45).brIf(0)
	f.loop()
	{
		f.get(w).set(wr)
		f.get(out).set(o)
		f.get(rows).set(r)
		f.loop() // rows
		{
			f.vZero().set(accs[0])
			f.get(xt).set(xs[0])
			f.get(wr).set(wp)
			f.get(K).i32c(2).shrU().set(k)
			f.loop()
			{
				f.accMul(accs[0], func() { f.get(wp).vLoad(0) }, func() { f.get(xs[0]).vLoad(0) })
				f.get(wp).i32c(16).add().set(wp)
				f.get(xs[0]).i32c(16).add().set(xs[0])
				f.get(k).i32c(1).sub().tee(k).brIf(0)
			}
			f.end()
			f.get(o).hsum(accs[0]).f32Store(0)
			f.get(wp).set(wr)
			f.get(o).i32c(4).add().set(o)
			f.get(r).i32c(1).sub().tee(r).brIf(0)
		}
		f.end()
		f.get(xt).get(rowBytes).add().set(xt)
		f.get(out).get(ldoBytes).add().set(out)
		f.get(t).i32c(1).sub().tee(t).brIf(0)
	}
	f.end()
	f.end()
	return f
}

// blockKernel is a quantised GEMV over blocks of 32 weights: bits 8
// (int8) or 4 (ggml's nibbles, offset by 8); planar reads the weights and
// the f16 scales from two planes, else from ggml's blocks (scale first).
func blockKernel(name string, planar bool, bits int) *fn {
	var f *fn
	var q, s, x, out, rows, K uint32
	if planar {
		f = &fn{params: 6, name: name}
		q, s, x, out, rows, K = 0, 1, 2, 3, 4, 5
	} else {
		f = &fn{params: 5, name: name}
		q, x, out, rows, K = 0, 1, 2, 3, 4
		s = q
	}
	// Per block: where the weights start after q, and q's and s's strides.
	qoff, qstep, sstep := uint32(0), int32(32), int32(2)
	if bits == 4 {
		qstep = 16
	}
	if !planar {
		qoff = 2
		qstep += 2
		sstep = 0
	}
	xp, b, h, em := f.local(i32), f.local(i32), f.local(i32), f.local(i32)
	acc, p, v, lo, hi := f.local(v128), f.local(v128), f.local(v128), f.local(v128), f.local(v128)
	f.block()
	f.get(rows).op(0x45).brIf(0)
	f.loop() // rows
	{
		f.vZero().set(acc)
		f.get(x).set(xp)
		f.get(K).i32c(5).shrU().set(b)
		f.loop() // blocks
		{
			f.vZero().set(p)
			f.blockGroups(q, qoff, bits, v, lo, hi, func(g uint32, push func()) {
				f.accMul(p, func() { push(); f.f32x4FromI32() }, func() { f.get(xp).vLoad(16 * g) })
			})
			f.accMul(acc, func() { f.get(p) }, func() { f.f16At(s, 0, h, em).f32Splat() })
			f.get(q).i32c(qstep).add().set(q)
			if planar {
				f.get(s).i32c(sstep).add().set(s)
			}
			f.get(xp).i32c(128).add().set(xp)
			f.get(b).i32c(1).sub().tee(b).brIf(0)
		}
		f.end()
		f.get(out).hsum(acc).f32Store(0)
		f.get(out).i32c(4).add().set(out)
		f.get(rows).i32c(1).sub().tee(rows).brIf(0)
	}
	f.end()
	f.end()
	return f
}

// blockGroups walks a block of 32 quantised weights at q+qoff (bits 8:
// int8; 4: ggml's nibbles, low halves first, offset by 8) as eight groups
// of four in element order: use(g, push) is called for group g (elements
// 4g..4g+3) with push, which pushes the group's values as an i32x4. v, lo
// and hi are v128 scratch locals.
func (f *fn) blockGroups(q, qoff uint32, bits int, v, lo, hi uint32, use func(g uint32, push func())) {
	if bits == 8 {
		for c := range uint32(4) {
			f.get(q).vLoad8x8S(qoff + 8*c).set(v)
			use(2*c, func() { f.get(v).i32FromI16Low() })
			use(2*c+1, func() { f.get(v).i32FromI16High() })
		}
		return
	}
	f.get(q).vLoad(qoff).set(v)
	f.get(v).i32c(0x0f).i8Splat().vAnd().i32c(8).i8Splat().i8Sub().set(lo)
	f.get(v).i32c(4).i8ShrU().i32c(8).i8Splat().i8Sub().set(hi)
	for half, src := range []uint32{lo, hi} {
		g := uint32(4 * half)
		use(g, func() { f.get(src).i16FromI8Low().i32FromI16Low() })
		use(g+1, func() { f.get(src).i16FromI8Low().i32FromI16High() })
		use(g+2, func() { f.get(src).i16FromI8High().i32FromI16Low() })
		use(g+3, func() { f.get(src).i16FromI8High().i32FromI16High() })
	}
}

// batchKernel is Batch: for each entry of the table, the Op's kernel
// called with the entry's arguments.
func batchKernel() *fn {
	f := &fn{params: 2, name: Batch}
	const table, n = 0, 1
	op := f.local(i32)
	f.block()
	f.get(n).eqz().brIf(0)
	f.loop()
	{
		f.get(table).i32Load(0).set(op)
		for o := range numOps {
			f.get(op).i32c(int32(o)).eq().ifBlock()
			for a := range uint32(opArgs[o]) {
				f.get(table).i32Load(4 + 4*a)
			}
			f.call(uint32(o)).end()
		}
		f.get(table).i32c(32).add().set(table)
		f.get(n).i32c(1).sub().tee(n).brIf(0)
	}
	f.end()
	f.end()
	return f
}

// dequantKernel writes rows·K/32 blocks of 32 weights out as f32, each
// q·d exactly as loader's dequantisation (and cpu's row for the planar
// types) computes it: bits and planar as blockKernel's.
func dequantKernel(name string, planar bool, bits int) *fn {
	f := &fn{params: 5, name: name}
	const q, s, out, rows, K = 0, 1, 2, 3, 4
	qoff, qstep, sstep := uint32(0), int32(32), int32(2)
	if bits == 4 {
		qstep = 16
	}
	if !planar {
		qoff, qstep, sstep = 2, qstep+2, 0
	}
	sp, b, h, em := f.local(i32), f.local(i32), f.local(i32), f.local(i32)
	d, v, lo, hi := f.local(v128), f.local(v128), f.local(v128), f.local(v128)
	f.block()
	f.get(rows).get(K).mul().i32c(5).shrU().tee(b).eqz().brIf(0)
	if planar {
		f.get(s).set(sp)
	} else {
		f.get(q).set(sp)
	}
	f.loop() // blocks
	{
		f.f16At(sp, 0, h, em).f32Splat().set(d)
		f.blockGroups(q, qoff, bits, v, lo, hi, func(g uint32, push func()) {
			f.get(out)
			push()
			f.f32x4FromI32().get(d).f32x4Mul().vStore(16 * g)
		})
		f.get(q).i32c(qstep).add().set(q)
		if planar {
			f.get(sp).i32c(sstep).add().set(sp)
		} else {
			f.get(q).set(sp)
		}
		f.get(out).i32c(128).add().set(out)
		f.get(b).i32c(1).sub().tee(b).brIf(0)
	}
	f.end()
	f.end()
	return f
}
