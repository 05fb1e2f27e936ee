package cpu

import (
	"math"

	"wasmllm/cpu/internal/wasmsimd"
)

// expf is e^x in float32: Cody and Waite's reduction x = n·ln2 + r with
// |r| <= ln2/2 and Cephes' polynomial (wasmsimd's constants) for e^r (within 2 ulp of
// the exact value), scaled by 2^n through the exponent bits (two halves, so that n = 128 needs no
// clamp). Below
// ln(2^-126) it is 0, above ln(FLT_MAX) +Inf; NaN stays NaN. Every
// product is rounded on its own (the explicit conversions keep a
// compiler from fusing them), so the SIMD kernel (cpu/internal/wasmsimd's
// vexp, four lanes at a time) gives the same bits, and so does every
// build of this loop.
func expf(x float32) float32 {
	xc := min(max(x, wasmsimd.ExpLo), wasmsimd.ExpHi)
	n := float32(math.Floor(float64(float32(xc*wasmsimd.ExpLog2e) + 0.5)))
	r := xc - float32(n*wasmsimd.ExpC1)
	r -= float32(n * wasmsimd.ExpC2)
	z := float32(r * r)
	y := float32(wasmsimd.ExpP0*r) + wasmsimd.ExpP1
	y = float32(y*r) + wasmsimd.ExpP2
	y = float32(y*r) + wasmsimd.ExpP3
	y = float32(y*r) + wasmsimd.ExpP4
	y = float32(y*r) + wasmsimd.ExpP5
	y = float32(y*z) + r + 1
	// 2^n in two normal halves: n runs from -126 to 128.
	n1 := int32(n) >> 1
	e := y * pow2(n1) * pow2(int32(n)-n1)
	switch {
	case x < wasmsimd.ExpLo:
		return 0
	case x > wasmsimd.ExpHi:
		return float32(math.Inf(1))
	}
	return e
}

// pow2 is 2^n for a normal float32's exponent n.
func pow2(n int32) float32 { return math.Float32frombits(uint32(n+127) << 23) }

// silu is x·sigmoid(x) with expf: cpu.Silu's value within a few ulp.
func silu(x float32) float32 { return x / (1 + expf(-x)) }

// siluMul is SiluMul with silu: out (T, F) = silu(gateUp[:, :F]) ·
// gateUp[:, F:], on the SIMD kernel when there is one and the rows are
// long enough to pay for the call.
func siluMul(out, gateUp []float32, T, F int) {
	F4 := 0
	if simd != nil && T*F >= simdMinElems {
		F4 = F &^ 3
		simd.silu(out, gateUp, T, F)
	}
	for t := 0; t < T; t++ {
		g, u, o := gateUp[t*2*F:t*2*F+F], gateUp[t*2*F+F:(t+1)*2*F], out[t*F:(t+1)*F]
		for i := F4; i < F; i++ {
			o[i] = silu(g[i]) * u[i]
		}
	}
}

// simdMinElems is the fewest elements of an element-wise op worth a call
// into the SIMD module (a syscall/js call costs about as much as 64 Go
// exponentials).
const simdMinElems = 256
