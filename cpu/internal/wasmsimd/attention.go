package wasmsimd

// Attn is the cached attention of cpu's attnTask, for (token, head) pairs
// [lo, hi):
//
//	Attn(qkv, kc, vc, out, scores, pos, lo, hi, H, Hk, Dh, window, scale)
//	  qkv (T, (H+2Hk)·Dh) f32, kc/vc (positions, Hk·Dh) f32, out (T, H·Dh) f32,
//	  scores: room for one head's keys (f32), pos (T) i32, scale: f32 bits
//
// Scores take four keys at a time (each key's dot in dotF32's order, the
// four horizontal sums done together by shuffles); the softmax's
// exponential is vexp (cpu.expf's bits); the weighted sum of V keeps up
// to sixteen of the head's outputs in registers while it runs over the
// keys, so each V row is read once. Every output gets the Go loop's
// operations in its order, so the kernel gives its bits. Dh is a multiple
// of 4.
const Attn = "attn"

// shuffle32 is i8x16.shuffle picking the 32-bit lanes a, b, c, d of the
// two operands (0-3 the first, 4-7 the second).
func (f *fn) shuffle32(lanes ...byte) *fn {
	f.simd(0x0d)
	for _, l := range lanes {
		f.op(4*l, 4*l+1, 4*l+2, 4*l+3)
	}
	return f
}

// pairSums pushes [a0+a1, a2+a3, b0+b1, b2+b3] for the v128 locals a, b.
func (f *fn) pairSums(a, b uint32) *fn {
	f.get(a).get(b).shuffle32(0, 2, 4, 6)
	f.get(a).get(b).shuffle32(1, 3, 5, 7)
	return f.f32x4Add()
}

func attnKernel() *fn {
	f := &fn{params: 13, name: Attn}
	const qkv, kc, vc, out, scores, pos, lo, hi, H, Hk, Dh, window, scaleBits = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
	th, tk, h, n, j0, kh, rowB, kvwB, headB := f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32)
	q, kp, vp, o, cnt, j, d, sp, qd, db, nb := f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32)
	var kd [4]uint32
	for i := range kd {
		kd[i] = f.local(i32)
	}
	maxS, sum, inv, scale := f.local(f32), f.local(f32), f.local(f32), f.local(f32)
	var acc [4]uint32
	for i := range acc {
		acc[i] = f.local(v128)
	}
	qv, wv, mv, ex, ey := f.local(v128), f.local(v128), f.local(v128), f.local(v128), f.local(v128)
	et := [3]uint32{f.local(v128), f.local(v128), f.local(v128)}

	// groups runs body count>>2 times, then tail count&3 times (j counts down).
	groups := func(count func(), body, tail func()) {
		count()
		f.i32c(2).shrU().set(j)
		f.block()
		f.get(j).eqz().brIf(0)
		f.loop()
		body()
		f.get(j).i32c(1).sub().tee(j).brIf(0)
		f.end()
		f.end()
		count()
		f.i32c(3).and().set(j)
		f.block()
		f.get(j).eqz().brIf(0)
		f.loop()
		tail()
		f.get(j).i32c(1).sub().tee(j).brIf(0)
		f.end()
		f.end()
	}
	cntF := func() { f.get(cnt) }

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

		// Scores and their maximum: four keys at a time, then one.
		f.f32c(0xff800000).set(maxS)
		f.get(maxS).f32Splat().set(mv)
		f.get(scores).set(sp)
		groups(cntF, func() {
			for i := range acc {
				f.vZero().set(acc[i])
			}
			f.get(kp).set(kd[0])
			for i := 1; i < 4; i++ {
				f.get(kd[i-1]).get(kvwB).add().set(kd[i])
			}
			f.get(q).set(qd)
			f.get(Dh).i32c(2).shrU().set(d)
			f.loop()
			{
				f.get(qd).vLoad(0).set(qv)
				for i := range acc {
					f.accMul(acc[i], func() { f.get(qv) }, func() { f.get(kd[i]).vLoad(0) })
					f.get(kd[i]).i32c(16).add().set(kd[i])
				}
				f.get(qd).i32c(16).add().set(qd)
				f.get(d).i32c(1).sub().tee(d).brIf(0)
			}
			f.end()
			// [hsum(acc0), .., hsum(acc3)]: (v0+v1) + (v2+v3) each
			f.pairSums(acc[0], acc[1]).set(acc[0])
			f.pairSums(acc[2], acc[3]).set(acc[2])
			f.pairSums(acc[0], acc[2]).get(scale).f32Splat().f32x4Mul().set(ex)
			f.get(sp).get(ex).vStore(0)
			f.get(mv).get(ex).f32x4Max().set(mv)
			f.get(sp).i32c(16).add().set(sp)
			f.get(kp).get(kvwB).i32c(2).shl().add().set(kp)
		}, func() {
			f.vZero().set(acc[0])
			f.get(q).set(qd)
			f.get(kp).set(kd[0])
			f.get(Dh).i32c(2).shrU().set(d)
			f.loop()
			{
				f.accMul(acc[0], func() { f.get(qd).vLoad(0) }, func() { f.get(kd[0]).vLoad(0) })
				f.get(qd).i32c(16).add().set(qd)
				f.get(kd[0]).i32c(16).add().set(kd[0])
				f.get(d).i32c(1).sub().tee(d).brIf(0)
			}
			f.end()
			f.get(sp).hsum(acc[0]).get(scale).f32Mul().f32Store(0)
			f.get(maxS).get(sp).f32Load(0).f32Max().set(maxS)
			f.get(sp).i32c(4).add().set(sp)
			f.get(kp).get(kvwB).add().set(kp)
		})
		for l := byte(0); l < 4; l++ {
			f.get(maxS).get(mv).f32Lane(l).f32Max().set(maxS)
		}

		// exp(score - max), four at a time, then one lane at a time.
		f.get(maxS).f32Splat().set(mv)
		f.get(scores).set(sp)
		groups(cntF, func() {
			f.get(sp).vLoad(0).get(mv).f32x4Sub().set(ex)
			f.vexp(ex, ey, et)
			f.get(sp).get(ey).vStore(0)
			f.get(sp).i32c(16).add().set(sp)
		}, func() {
			f.get(sp).f32Load(0).get(maxS).f32Sub().f32Splat().set(ex)
			f.vexp(ex, ey, et)
			f.get(sp).get(ey).f32Lane(0).f32Store(0)
			f.get(sp).i32c(4).add().set(sp)
		})
		// Their sum, in order, and the weights score·(1/sum).
		f.f32c(0).set(sum)
		f.get(scores).set(sp)
		f.get(cnt).set(j)
		f.loop()
		{
			f.get(sum).get(sp).f32Load(0).f32Add().set(sum)
			f.get(sp).i32c(4).add().set(sp)
			f.get(j).i32c(1).sub().tee(j).brIf(0)
		}
		f.end()
		f.f32c(0x3f800000).get(sum).f32Div().set(inv)
		f.get(inv).f32Splat().set(wv)
		f.get(scores).set(sp)
		groups(cntF, func() {
			f.get(sp).get(sp).vLoad(0).get(wv).f32x4Mul().vStore(0)
			f.get(sp).i32c(16).add().set(sp)
		}, func() {
			f.get(sp).get(sp).f32Load(0).get(inv).f32Mul().f32Store(0)
			f.get(sp).i32c(4).add().set(sp)
		})

		// out = Σ weight · v: sixteen outputs at a time, then four.
		f.get(out).get(th).get(headB).mul().add().set(o)
		f.i32c(0).set(db)
		for _, width := range []int{4, 1} {
			if width == 4 {
				f.get(Dh).i32c(4).shrU().set(nb)
			} else {
				f.get(Dh).i32c(2).shrU().i32c(3).and().set(nb)
			}
			f.block()
			f.get(nb).eqz().brIf(0)
			f.loop()
			{
				for i := range width {
					f.vZero().set(acc[i])
				}
				f.get(scores).set(sp)
				f.get(vp).get(db).add().set(kd[0])
				f.get(cnt).set(j)
				f.loop()
				{
					f.get(sp).f32Load(0).f32Splat().set(qv)
					for i := range width {
						f.accMul(acc[i], func() { f.get(qv) }, func() { f.get(kd[0]).vLoad(uint32(16 * i)) })
					}
					f.get(sp).i32c(4).add().set(sp)
					f.get(kd[0]).get(kvwB).add().set(kd[0])
					f.get(j).i32c(1).sub().tee(j).brIf(0)
				}
				f.end()
				f.get(o).get(db).add().set(d)
				for i := range width {
					f.get(d).get(acc[i]).vStore(uint32(16 * i))
				}
				f.get(db).i32c(int32(16 * width)).add().set(db)
				f.get(nb).i32c(1).sub().tee(nb).brIf(0)
			}
			f.end()
			f.end()
		}
		f.get(th).i32c(1).add().tee(th).get(hi).ltU().brIf(0)
	}
	f.end()
	f.end()
	return f
}
