package wasmsimd

import "math"

// The constants of the float32 exponential that the kernels use and cpu's
// expf computes in Go (Cody and Waite's reduction, Cephes' expf.c
// polynomial).
const (
	ExpLo    float32 = -87.33654475 // ln(2^-126): below it, 0
	ExpHi    float32 = 88.72283935  // ln(FLT_MAX): above it, +Inf
	ExpLog2e float32 = 1.44269504088896341
	ExpC1    float32 = 0.693359375 // ln2 = C1 - C2, C1 exact in 9 bits
	ExpC2    float32 = -2.12194440e-4
	ExpP0    float32 = 1.9875691500e-4
	ExpP1    float32 = 1.3981999507e-3
	ExpP2    float32 = 8.3334519073e-3
	ExpP3    float32 = 4.1665795894e-2
	ExpP4    float32 = 1.6666665459e-1
	ExpP5    float32 = 5.0000001201e-1
)

// splat pushes v in every f32 lane.
func (f *fn) splat(v float32) *fn { return f.f32c(math.Float32bits(v)).f32Splat() }

// vexp sets the v128 local out to e^x lane by lane, in cpu.expf's order
// of operations (so its bits), using the v128 locals t[0..2] as scratch.
func (f *fn) vexp(x, out uint32, t [3]uint32) *fn {
	xc, n, r := t[0], t[1], t[2]
	f.get(x).splat(ExpLo).f32x4Max().splat(ExpHi).f32x4Min().set(xc)
	f.get(xc).splat(ExpLog2e).f32x4Mul().splat(0.5).f32x4Add().f32x4Floor().set(n)
	f.get(xc).get(n).splat(ExpC1).f32x4Mul().f32x4Sub().set(r)
	f.get(r).get(n).splat(ExpC2).f32x4Mul().f32x4Sub().set(r)
	f.get(r).get(r).f32x4Mul().set(xc) // z = r², in xc's place
	f.splat(ExpP0).get(r).f32x4Mul().splat(ExpP1).f32x4Add()
	for _, p := range []float32{ExpP2, ExpP3, ExpP4, ExpP5} {
		f.get(r).f32x4Mul().splat(p).f32x4Add()
	}
	f.get(xc).f32x4Mul().get(r).f32x4Add().splat(1).f32x4Add()
	// · 2^n1 · 2^(n-n1), n1 = n>>1, through the exponent bits; n becomes i32 lanes in r
	f.get(n).i32x4TruncSatF32().set(r)
	f.get(r).i32c(1).i32x4ShrS().set(n)
	f.get(n).i32c(127).i32Splat().i32x4Add().i32c(23).i32x4Shl().f32x4Mul()
	f.get(r).get(n).i32x4Sub().i32c(127).i32Splat().i32x4Add().i32c(23).i32x4Shl().f32x4Mul().set(out)
	// x < lo: 0; x > hi: +Inf (bitselect takes its first operand where the mask is set)
	f.vZero().get(out).get(x).splat(ExpLo).f32x4Lt().vBitselect().set(out)
	f.splat(float32(math.Inf(1))).get(out).get(x).splat(ExpHi).f32x4Gt().vBitselect().set(out)
	return f
}

// expArrayKernel is Exp(p, n): p[i] = e^p[i] for i < n (f32, in place),
// four lanes at a time and the rest one lane at a time.
func expArrayKernel() *fn {
	f := &fn{params: 2, name: Exp}
	const p, n = 0, 1
	j := f.local(i32)
	x, y := f.local(v128), f.local(v128)
	t := [3]uint32{f.local(v128), f.local(v128), f.local(v128)}
	f.get(n).i32c(2).shrU().set(j)
	f.block()
	f.get(j).eqz().brIf(0)
	f.loop()
	{
		f.get(p).vLoad(0).set(x)
		f.vexp(x, y, t)
		f.get(p).get(y).vStore(0)
		f.get(p).i32c(16).add().set(p)
		f.get(j).i32c(1).sub().tee(j).brIf(0)
	}
	f.end()
	f.end()
	f.get(n).i32c(3).and().set(j)
	f.block()
	f.get(j).eqz().brIf(0)
	f.loop()
	{
		f.get(p).f32Load(0).f32Splat().set(x)
		f.vexp(x, y, t)
		f.get(p).get(y).f32Lane(0).f32Store(0)
		f.get(p).i32c(4).add().set(p)
		f.get(j).i32c(1).sub().tee(j).brIf(0)
	}
	f.end()
	f.end()
	return f
}

// siluKernel is cpu.siluMul's first F&^3 columns of each row:
//
//	Silu(out, gateUp, T, F)   out (T, F) f32, gateUp (T, 2F) f32
//	out[t][i] = g / (1 + e^-g) · u, g = gateUp[t][i], u = gateUp[t][F+i]
func siluKernel() *fn {
	f := &fn{params: 4, name: Silu}
	const out, gu, T, F = 0, 1, 2, 3
	th, j, o, g, rowB := f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32)
	gv, x, y := f.local(v128), f.local(v128), f.local(v128)
	t := [3]uint32{f.local(v128), f.local(v128), f.local(v128)}
	f.block()
	f.get(T).eqz().brIf(0)
	f.get(F).i32c(2).shrU().eqz().brIf(0)
	f.get(F).i32c(3).shl().set(rowB) // one gateUp row, bytes
	f.get(T).set(th)
	f.loop()
	{
		f.get(out).set(o)
		f.get(gu).set(g)
		f.get(F).i32c(2).shrU().set(j)
		f.loop()
		{
			f.get(g).vLoad(0).tee(gv).f32x4Neg().set(x)
			f.vexp(x, y, t)
			f.get(o)
			f.get(gv).splat(1).get(y).f32x4Add().f32x4Div()
			f.get(g).get(rowB).i32c(1).shrU().add().vLoad(0).f32x4Mul()
			f.vStore(0)
			f.get(o).i32c(16).add().set(o)
			f.get(g).i32c(16).add().set(g)
			f.get(j).i32c(1).sub().tee(j).brIf(0)
		}
		f.end()
		f.get(out).get(F).i32c(2).shl().add().set(out)
		f.get(gu).get(rowB).add().set(gu)
		f.get(th).i32c(1).sub().tee(th).brIf(0)
	}
	f.end()
	f.end()
	return f
}
