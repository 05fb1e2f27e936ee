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

// postNorm RMS-normalises y (rows of len(w)) in place: each group of G
// values (G > 0; else the whole row) on its own, times w's column.
func postNorm(y, w []float32, G int, eps float32) {
	N := len(w)
	if G <= 0 {
		G = N
	}
	for r := 0; r+N <= len(y); r += N {
		for g := 0; g < N; g += G {
			seg := y[r+g : r+g+G]
			var sum float64
			for _, v := range seg {
				sum += float64(v) * float64(v)
			}
			scale := float32(1 / math.Sqrt(sum/float64(G)+float64(eps)))
			for i, v := range seg {
				seg[i] = v * scale * w[g+i]
			}
		}
	}
}

// GeluGate: out (T, P) = gelu_tanh(gate (T, P)) * src[:, col0:col0+P],
// src (T, C).
func GeluGate(out, gate, src []float32, T, P, C, col0 int) {
	for t := 0; t < T; t++ {
		for i := 0; i < P; i++ {
			out[t*P+i] = GeluTanh(gate[t*P+i]) * src[t*C+col0+i]
		}
	}
}
