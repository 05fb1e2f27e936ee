package wasmsimd

// DeltaStep(M, k, v, q, o, dv, S, decay, beta) is one token of a Gated
// DeltaNet value head's recurrence, cpu's deltaTask.step in its order of
// operations (so its bits), four state columns at a time:
//
//	M (S, S) f32, in place: the head's state, row r for key index r
//	k, q (S) f32: the token's key and query (of the head's key head)
//	v (S) f32: its value
//	o (S) f32: out, the read-out
//	dv (S) f32: scratch
//	decay, beta: f32 bits, e^g and the token's beta
//
// M ← decay·M; dv = beta⊙(v − Σ_r k[r]·M[r]); M[r] += k[r]·dv; o = Σ_r
// q[r]·M[r] (S a multiple of 4).
const DeltaStep = "deltastep"

func deltaStepKernel() *fn {
	f := &fn{params: 9, name: DeltaStep}
	const M, k, v, q, o, dv, S, decayB, betaB = 0, 1, 2, 3, 4, 5, 6, 7, 8
	r, j, p, d, x := f.local(i32), f.local(i32), f.local(i32), f.local(i32), f.local(i32)
	op, qp, n := f.local(i32), f.local(i32), f.local(i32)
	decay, beta, kr, qr, m := f.local(v128), f.local(v128), f.local(v128), f.local(v128), f.local(v128)
	f.block()
	f.get(S).i32c(2).shrU().eqz().brIf(0)
	f.get(decayB).i32AsF32().f32Splat().set(decay)
	f.get(betaB).i32AsF32().f32Splat().set(beta)
	// clear dv and o
	f.get(dv).set(d)
	f.get(o).set(p)
	f.get(S).i32c(2).shrU().set(j)
	f.loop()
	{
		f.get(d).i32c(0).i32Splat().vStore(0)
		f.get(p).i32c(0).i32Splat().vStore(0)
		f.get(d).i32c(16).add().set(d)
		f.get(p).i32c(16).add().set(p)
		f.get(j).i32c(1).sub().tee(j).brIf(0)
	}
	f.end()
	// each row: M[r] *= decay, then dv += k[r]·M[r]
	f.get(M).set(p)
	f.get(k).set(x)
	f.get(S).set(r)
	f.loop()
	{
		f.get(x).f32Load(0).f32Splat().set(kr)
		f.get(dv).set(d)
		f.get(S).i32c(2).shrU().set(j)
		f.loop()
		{
			f.get(p).get(p).vLoad(0).get(decay).f32x4Mul().tee(m).vStore(0)
			f.get(d).get(d).vLoad(0).get(kr).get(m).f32x4Mul().f32x4Add().vStore(0)
			f.get(p).i32c(16).add().set(p)
			f.get(d).i32c(16).add().set(d)
			f.get(j).i32c(1).sub().tee(j).brIf(0)
		}
		f.end()
		f.get(x).i32c(4).add().set(x)
		f.get(r).i32c(1).sub().tee(r).brIf(0)
	}
	f.end()
	// dv = beta·(v − dv)
	f.get(dv).set(d)
	f.get(v).set(p)
	f.get(S).i32c(2).shrU().set(j)
	f.loop()
	{
		f.get(d).get(beta).get(p).vLoad(0).get(d).vLoad(0).f32x4Sub().f32x4Mul().vStore(0)
		f.get(d).i32c(16).add().set(d)
		f.get(p).i32c(16).add().set(p)
		f.get(j).i32c(1).sub().tee(j).brIf(0)
	}
	f.end()
	// each row: M[r] += k[r]·dv, then o += q[r]·M[r]
	f.get(M).set(p)
	f.get(k).set(x)
	f.get(q).set(qp)
	f.get(S).set(r)
	f.loop()
	{
		f.get(x).f32Load(0).f32Splat().set(kr)
		f.get(qp).f32Load(0).f32Splat().set(qr)
		f.get(dv).set(d)
		f.get(o).set(op)
		f.get(S).i32c(2).shrU().set(n)
		f.loop()
		{
			f.get(p).get(p).vLoad(0).get(kr).get(d).vLoad(0).f32x4Mul().f32x4Add().tee(m).vStore(0)
			f.get(op).get(op).vLoad(0).get(qr).get(m).f32x4Mul().f32x4Add().vStore(0)
			f.get(p).i32c(16).add().set(p)
			f.get(d).i32c(16).add().set(d)
			f.get(op).i32c(16).add().set(op)
			f.get(n).i32c(1).sub().tee(n).brIf(0)
		}
		f.end()
		f.get(x).i32c(4).add().set(x)
		f.get(qp).i32c(4).add().set(qp)
		f.get(r).i32c(1).sub().tee(r).brIf(0)
	}
	f.end() // the rows' loop
	f.end() // the block
	return f
}
