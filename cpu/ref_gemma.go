package cpu

import "math"

// The plain-loop references of Gemma's math: GeGLU (GELU, tanh form),
// the post-norm and soft-cap epilogues of MatMul, and Scale.

// GeluTanh is GELU in its tanh form, Hugging Face's gelu_pytorch_tanh:
// 0.5x(1 + tanh(sqrt(2/π)(x + 0.044715x³))), computed in float64.
func GeluTanh(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v))))
}

// geluMulRef: out (T, F) = gelu_tanh(gateUp[:, :F]) * gateUp[:, F:].
func geluMulRef(out, gateUp []float32, T, F int) {
	for t := 0; t < T; t++ {
		for i := 0; i < F; i++ {
			out[t*F+i] = GeluTanh(gateUp[t*2*F+i]) * gateUp[t*2*F+F+i]
		}
	}
}

// SoftCap is c·tanh(x/c), computed in float64.
func SoftCap(x, c float32) float32 {
	return float32(float64(c) * math.Tanh(float64(x)/float64(c)))
}

// Scale multiplies every value of x by s, in place.
func Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
