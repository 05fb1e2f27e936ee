// Plain-loop references of the encoder ops (model.EncoderOps): the numeric
// oracles of the kernels of the same names.

package cpu

import (
	"math"

	"wasmllm/model"
)

// GELU is the erf GELU of Hugging Face's "gelu": x·(1+erf(x/√2))/2.
func GELU(x float32) float32 {
	return float32(0.5 * float64(x) * (1 + math.Erf(float64(x)/math.Sqrt2)))
}

// AddBias: x (T, N) += bias (N) per row, then GELU of every value when gelu.
func AddBias(x, bias []float32, T, N int, gelu bool) {
	for t := 0; t < T; t++ {
		row := x[t*N : (t+1)*N]
		for i := range row {
			v := row[i] + bias[i]
			if gelu {
				v = GELU(v)
			}
			row[i] = v
		}
	}
}

// LayerNorm: x (T, D) = LN(x + add) · w + b per row, biased variance, the
// sums in float64; add may be nil.
func LayerNorm(x, add, w, b []float32, T, D int, eps float32) {
	for t := 0; t < T; t++ {
		row := x[t*D : (t+1)*D]
		if add != nil {
			for i := range row {
				row[i] += add[t*D+i]
			}
		}
		var sum float64
		for _, v := range row {
			sum += float64(v)
		}
		mean := sum / float64(D)
		var sq float64
		for _, v := range row {
			d := float64(v) - mean
			sq += d * d
		}
		inv := 1 / math.Sqrt(sq/float64(D)+float64(eps))
		for i, v := range row {
			row[i] = float32((float64(v)-mean)*inv)*w[i] + b[i]
		}
	}
}

// Rope rotates the first H+Hk heads (of Dh) of each row of x (T, C) at
// positions pos (T) by the frequencies invFreq, in place: NeoX pairs
// (i, i+len(invFreq)), else adjacent pairs. With qw not nil, the first H
// heads are RMS-normalised with qw and the next Hk with kw (Dh) first. No
// bias, no cache.
func Rope(x []float32, pos []int32, qw, kw []float32, C, H, Hk, Dh int, eps float32, neox bool, invFreq []float32) {
	if qw != nil {
		qkNorm(x, qw, kw, len(pos), H, Hk, Dh, C, eps)
	}
	rope(x, pos, nil, C, H+Hk, Dh, neox, invFreq, 1)
}

// AttendSeq: bidirectional GQA attention within sequences. qkv
// (T, (H+2Hk)·Dh) holds [q | k | v] per token; token t's query head h
// attends, with key/value head h/(H/Hk), to every token u with
// seq[u] == seq[t], when radius > 0 |u-t| <= radius, and when causal
// u <= t, softmax(q·k/√Dh) over them: out (T, H·Dh).
func AttendSeq(out, qkv []float32, seq []int32, T, H, Hk, Dh, radius int, causal bool) {
	C := (H + 2*Hk) * Dh
	scale := 1 / math.Sqrt(float64(Dh))
	s := make([]float64, T)
	sees := func(t, u int) bool {
		return seq[u] == seq[t] && (radius <= 0 || (u-t <= radius && t-u <= radius)) && (!causal || u <= t)
	}
	for t := 0; t < T; t++ {
		for h := 0; h < H; h++ {
			g := h / (H / Hk)
			q := qkv[t*C+h*Dh : t*C+(h+1)*Dh]
			maxS := math.Inf(-1)
			for u := 0; u < T; u++ {
				if !sees(t, u) {
					continue
				}
				k := qkv[u*C+H*Dh+g*Dh:]
				var dot float64
				for d := range q {
					dot += float64(q[d]) * float64(k[d])
				}
				s[u] = dot * scale
				maxS = math.Max(maxS, s[u])
			}
			var sum float64
			for u := 0; u < T; u++ {
				if sees(t, u) {
					s[u] = math.Exp(s[u] - maxS)
					sum += s[u]
				}
			}
			o := out[t*H*Dh+h*Dh : t*H*Dh+(h+1)*Dh]
			for d := range o {
				var acc float64
				for u := 0; u < T; u++ {
					if sees(t, u) {
						acc += s[u] / sum * float64(qkv[u*C+(H+Hk)*Dh+g*Dh+d])
					}
				}
				o[d] = float32(acc)
			}
		}
	}
}

// Pool: out (S, D), one row per sequence [bounds[2s], bounds[2s+1]) of x
// (T, D): the mean of its rows, its first row or its last.
func Pool(out, x []float32, bounds []int32, D int, mode model.Pooling) {
	for s := 0; s < len(bounds)/2; s++ {
		lo, hi := int(bounds[2*s]), int(bounds[2*s+1])
		o := out[s*D : (s+1)*D]
		switch mode {
		case model.PoolCLS:
			copy(o, x[lo*D:(lo+1)*D])
		case model.PoolLast:
			copy(o, x[(hi-1)*D:hi*D])
		default:
			for d := range o {
				var sum float64
				for t := lo; t < hi; t++ {
					sum += float64(x[t*D+d])
				}
				o[d] = float32(sum / float64(hi-lo))
			}
		}
	}
}
