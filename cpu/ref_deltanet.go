// The plain-loop definition of the Gated DeltaNet op (model.Backend's
// DeltaNet), token by token, as llama.cpp's CPU kernel computes it: the
// oracle for the Backend's chunked prefill and for every backend's kernel.

package cpu

import "math"

// DeltaNet runs a Gated DeltaNet layer's mixing over T tokens of one
// sequence: proj (T, W) with W = ConvDim + n_v·S + 2n_v holds each token's
// [q k v | z | beta | alpha], convW (ConvDim, K) the conv, a and dtBias
// (n_v), norm (S), convState ((K-1), ConvDim) and state (n_v, S, S)
// ([key a][value b]) updated in place; out (T, n_v·S). ConvDim =
// (2n_k + n_v)·S. Value head j reads key head j mod n_k.
func DeltaNet(out, proj, convW, a, dtBias, norm, convState, state []float32, T, nk, nv, S, K int, eps float32) {
	convDim, inner := (2*nk+nv)*S, nv*S
	W := convDim + inner + 2*nv
	X := make([]float32, K*convDim) // the conv's window: K-1 kept rows, then the token's
	act := make([]float32, convDim)
	d := make([]float32, S)
	o := make([]float32, S)
	scale := float32(1 / math.Sqrt(float64(S)))
	for t := 0; t < T; t++ {
		row := proj[t*W : (t+1)*W]
		copy(X, convState)
		copy(X[(K-1)*convDim:], row[:convDim])
		for c := 0; c < convDim; c++ {
			var sum float32
			for i := 0; i < K; i++ {
				sum += X[i*convDim+c] * convW[c*K+i]
			}
			act[c] = Silu(sum)
		}
		copy(convState, X[convDim:])
		q, k, v := act[:nk*S], act[nk*S:2*nk*S], act[2*nk*S:]
		l2Norm(q, S, eps)
		l2Norm(k, S, eps)
		z := row[convDim : convDim+inner]
		beta, alpha := row[convDim+inner:convDim+inner+nv], row[convDim+inner+nv:]
		for j := 0; j < nv; j++ {
			kj, qj, vj := k[(j%nk)*S:(j%nk+1)*S], q[(j%nk)*S:(j%nk+1)*S], v[j*S:(j+1)*S]
			b := Sigmoid(beta[j])
			decay := float32(math.Exp(float64(a[j] * softplus(alpha[j]+dtBias[j]))))
			M := state[j*S*S : (j+1)*S*S]
			for i := range M {
				M[i] *= decay
			}
			for c := 0; c < S; c++ {
				var u float32
				for r := 0; r < S; r++ {
					u += M[r*S+c] * kj[r]
				}
				d[c] = b * (vj[c] - u)
			}
			for r := 0; r < S; r++ {
				for c := 0; c < S; c++ {
					M[r*S+c] += kj[r] * d[c]
				}
			}
			for c := 0; c < S; c++ {
				var sum float32
				for r := 0; r < S; r++ {
					sum += M[r*S+c] * qj[r]
				}
				o[c] = sum * scale
			}
			y := out[t*inner+j*S : t*inner+(j+1)*S]
			rmsNorm(y, o, norm, eps)
			for c := range y {
				y[c] *= Silu(z[j*S+c])
			}
		}
	}
}

// l2Norm scales each segment of n values of x to x / max(‖x‖, eps), as
// ggml_l2_norm does.
func l2Norm(x []float32, n int, eps float32) {
	for s := 0; s+n <= len(x); s += n {
		seg := x[s : s+n]
		var sum float64
		for _, v := range seg {
			sum += float64(v) * float64(v)
		}
		inv := float32(1 / max(math.Sqrt(sum), float64(eps)))
		for i := range seg {
			seg[i] *= inv
		}
	}
}

// softplus is log(1 + e^x), and x above 20 (as ggml's).
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log1p(math.Exp(float64(x))))
}
