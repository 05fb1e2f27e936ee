package wasmsimd

import "math"

// Attn is the cached attention of cpu's attnTask, for (token, head) pairs
// [lo, hi):
//
//	Attn(qkv, kc, vc, out, scores, pos, lo, hi, H, Hk, Dh, window, scale)
//	  qkv (T, (H+2Hk)·Dh) f32, kc/vc (positions, Hk·Dh) f32, out (T, H·Dh) f32,
//	  scores: room for one head's keys (f32), pos (T) i32, scale: f32 bits
//
// The softmax's exponential is Go's math.Exp as it runs on wasm (the
// portable exp and expmulti, in the same float64 operations), so the
// kernel gives the Go loop's bits. Dh is a multiple of 4.
const Attn = "attn"

// expIndex is the exp function's index in the module.
const expIndex = 6

// expKernel is Go's math.exp (math/exp.go) for wasm: (f64) -> f64.
func expKernel() *fn {
	const (
		ln2Hi     = 6.93147180369123816490e-01
		ln2Lo     = 1.90821492927058770002e-10
		log2e     = 1.44269504088896338700e+00
		overflow  = 7.09782712893383973096e+02
		underflow = -7.45133219101941108420e+02
		nearZero  = 1.0 / (1 << 28)
		p1        = 1.66666666666666657415e-01
		p2        = -2.77777777770155933842e-03
		p3        = 6.61375632143793436117e-05
		p4        = -1.65339022054652515390e-06
		p5        = 4.13813679705723846039e-08
	)
	f := &fn{ptypes: []byte{f64}, results: []byte{f64}}
	const x = 0
	k := f.local(i32)
	hi, lo, r, t, c, a := f.local(f64), f.local(f64), f.local(f64), f.local(f64), f.local(f64), f.local(f64)
	f.get(x).get(x).f64Ne().ifElse().get(x).ret().end()
	f.get(x).f64c(overflow).f64Gt().ifElse().f64c(math.Inf(1)).ret().end()
	f.get(x).f64c(underflow).f64Lt().ifElse().f64c(0).ret().end()
	f.f64c(-nearZero).get(x).f64Lt().get(x).f64c(nearZero).f64Lt().and().ifElse().f64c(1).get(x).f64Add().ret().end()
	// k = int(log2e*x - 0.5) below 0, int(log2e*x + 0.5) above.
	f.f64c(log2e).get(x).f64Mul().set(a)
	f.get(a).f64c(0.5).f64Sub().get(a).f64c(0.5).f64Add().get(x).f64c(0).f64Lt().sel().i32FromF64().set(k)
	f.get(x).get(k).f64FromI32().f64c(ln2Hi).f64Mul().f64Sub().set(hi)
	f.get(k).f64FromI32().f64c(ln2Lo).f64Mul().set(lo)
	// expmulti
	f.get(hi).get(lo).f64Sub().set(r)
	f.get(r).get(r).f64Mul().set(t)
	f.get(r).get(t)
	f.f64c(p1).get(t).f64c(p2).get(t).f64c(p3).get(t).f64c(p4).get(t).f64c(p5)
	f.f64Mul().f64Add().f64Mul().f64Add().f64Mul().f64Add().f64Mul().f64Add()
	f.f64Mul().f64Sub().set(c)
	// y = 1 - ((lo - (r*c)/(2-c)) - hi)
	f.f64c(1).get(lo).get(r).get(c).f64Mul().f64c(2).get(c).f64Sub().f64Div().f64Sub().get(hi).f64Sub().f64Sub().set(a)
	// Ldexp(y, k): exact while the result is a normal float64; below
	// that it is under float32's smallest, which is all the caller keeps.
	f.get(a).get(k).i64FromI32().i64c(1023).i64Add().i64c(52).i64Shl().f64FromBits().f64Mul()
	f.f64c(0)
	f.get(k).i32c(-1022).geS().sel()
	return f
}

func attnKernel() *fn {
	f := &fn{params: 13, name: Attn}
	const qkv, kc, vc, out, scores, pos, lo, hi, H, Hk, Dh, window, scaleBits = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
	th, tk, h, n, j0, kh, rowB, kvwB, headB := f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32)
	q, kp, vp, o, cnt, j, d, sp, qd, kd := f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32)
	maxS, sum, inv, scale := f.local(f32), f.local(f32), f.local(f32), f.local(f32)
	acc, wv := f.local(v128), f.local(v128)
	f.block()
	f.get(lo).get(hi).geU().brIf(0)
	f.get(scaleBits).i32AsF32().set(scale)
	f.get(H).get(Hk).i32c(2).mul().add().get(Dh).mul().i32c(2).shl().set(rowB) // one token's qkv row, bytes
	f.get(Hk).get(Dh).mul().i32c(2).shl().set(kvwB)                            // one position's K (or V) row
	f.get(Dh).i32c(2).shl().set(headB)
	f.get(lo).set(th)
	f.loop()
	{
		f.get(th).get(H).divU().set(tk)
		f.get(th).get(H).remU().set(h)
		f.get(pos).get(tk).i32c(2).shl().add().i32Load(0).i32c(1).add().set(n)
		// j0 = max(0, n-window) with a window, else 0
		f.get(n).get(window).sub().set(j0)
		f.get(j0).i32c(0).get(j0).i32c(0).gtS().sel().set(j0)
		f.get(j0).i32c(0).get(window).i32c(0).gtS().sel().set(j0)
		f.get(h).get(H).get(Hk).divU().divU().set(kh)
		f.get(qkv).get(tk).get(rowB).mul().add().get(h).get(headB).mul().add().set(q)
		f.get(j0).get(kvwB).mul().get(kh).get(headB).mul().add().set(kp)
		f.get(vc).get(kp).add().set(vp)
		f.get(kc).get(kp).add().set(kp)
		f.get(n).get(j0).sub().set(cnt)
		// Scores and their maximum.
		f.f32c(0xff800000).set(maxS)
		f.get(scores).set(sp)
		f.get(cnt).set(j)
		f.loop()
		{
			f.vZero().set(acc)
			f.get(q).set(qd)
			f.get(kp).set(kd)
			f.get(Dh).i32c(2).shrU().set(d)
			f.loop()
			{
				f.accMul(acc, func() { f.get(qd).vLoad(0) }, func() { f.get(kd).vLoad(0) })
				f.get(qd).i32c(16).add().set(qd)
				f.get(kd).i32c(16).add().set(kd)
				f.get(d).i32c(1).sub().tee(d).brIf(0)
			}
			f.end()
			f.get(sp).hsum(acc).get(scale).f32Mul().f32Store(0)
			f.get(maxS).get(sp).f32Load(0).f32Max().set(maxS)
			f.get(sp).i32c(4).add().set(sp)
			f.get(kp).get(kvwB).add().set(kp)
			f.get(j).i32c(1).sub().tee(j).brIf(0)
		}
		f.end()
		// exp and their sum.
		f.f32c(0).set(sum)
		f.get(scores).set(sp)
		f.get(cnt).set(j)
		f.loop()
		{
			f.get(sp).get(sp).f32Load(0).get(maxS).f32Sub().f64FromF32().call(expIndex).f32FromF64().f32Store(0)
			f.get(sum).get(sp).f32Load(0).f32Add().set(sum)
			f.get(sp).i32c(4).add().set(sp)
			f.get(j).i32c(1).sub().tee(j).brIf(0)
		}
		f.end()
		f.f32c(0x3f800000).get(sum).f32Div().set(inv)
		// out = Σ weight · v
		f.get(out).get(th).get(headB).mul().add().set(o)
		f.get(o).set(qd)
		f.get(Dh).i32c(2).shrU().set(d)
		f.loop()
		{
			f.get(qd).vZero().vStore(0)
			f.get(qd).i32c(16).add().set(qd)
			f.get(d).i32c(1).sub().tee(d).brIf(0)
		}
		f.end()
		f.get(scores).set(sp)
		f.get(cnt).set(j)
		f.loop()
		{
			f.get(sp).f32Load(0).get(inv).f32Mul().f32Splat().set(wv)
			f.get(o).set(qd)
			f.get(vp).set(kd)
			f.get(Dh).i32c(2).shrU().set(d)
			f.loop()
			{
				f.get(qd).get(qd).vLoad(0).get(wv).get(kd).vLoad(0).f32x4Mul().f32x4Add().vStore(0)
				f.get(qd).i32c(16).add().set(qd)
				f.get(kd).i32c(16).add().set(kd)
				f.get(d).i32c(1).sub().tee(d).brIf(0)
			}
			f.end()
			f.get(sp).i32c(4).add().set(sp)
			f.get(vp).get(kvwB).add().set(vp)
			f.get(j).i32c(1).sub().tee(j).brIf(0)
		}
		f.end()
		f.get(th).i32c(1).add().tee(th).get(hi).ltU().brIf(0)
	}
	f.end()
	f.end()
	return f
}
