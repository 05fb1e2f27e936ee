// The functions in this file are the plain-loop definitions of every op,
// each the numeric oracle for the kernel of the same name; the Backend runs
// faster equivalents.

package cpu

import (
	"math"

	"wasmllm/loader"
)

// Embed gathers rows: out (T, D) = table (V, D) [ids (T)].
func Embed(out, table []float32, ids []int32, D int) {
	for t, id := range ids {
		copy(out[t*D:(t+1)*D], table[int(id)*D:(int(id)+1)*D])
	}
}

// rmsNorm normalises each segment of len(w) values of x into out (out may be x).
func rmsNorm(out, x, w []float32, eps float32) {
	n := len(w)
	for s := 0; s+n <= len(x); s += n {
		seg := x[s : s+n]
		var sum float64
		for _, v := range seg {
			sum += float64(v) * float64(v)
		}
		scale := float32(1 / math.Sqrt(sum/float64(n)+float64(eps)))
		for i, v := range seg {
			out[s+i] = v * scale * w[i]
		}
	}
}

// Fusion is MatMul's prologue and epilogue (model.MatMulFusion's, on host
// values).
type Fusion struct {
	Norm    []float32 // (K): x is read as RMSNorm(x) * Norm; nil: x as it is
	Eps     float32
	SiluMul bool    // w is gate_up (2F, K): out (T, F) = SiluMul of the product
	GeluMul bool    // w is gate_up (2F, K): out (T, F) = gelu_tanh(gate)·up
	Scale   float32 // not 0: the result times Scale, before the post-norm
	// PostNorm (N, or F after SiluMul or GeluMul): each row of the result
	// (each PostNormGroup values of it, when > 0) RMS-normalised, weighted
	// by PostNorm's column; nil: none.
	PostNorm      []float32
	PostNormGroup int
	SoftCap       float32 // > 0: each value v of the result is SoftCap·tanh(v/SoftCap)
	Add           bool    // out += the result
}

// MatMul: out (T, N) = x (T, K) · w (N, K)ᵀ, w dequantised, with f's
// prologue and epilogue, in order: the norm, the product, SiluMul or
// GeluMul, the post-norm, the soft-cap, the add.
func MatMul(out, x, w []float32, T, N, K int, f Fusion) {
	xn := x
	if f.Norm != nil {
		xn = make([]float32, T*K)
		rmsNorm(xn, x, f.Norm, f.Eps)
	}
	y := make([]float32, T*N)
	product(y, xn, w, T, N, K)
	if f.SiluMul || f.GeluMul {
		F := N / 2
		act := make([]float32, T*F)
		if f.SiluMul {
			siluMulRef(act, y, T, F)
		} else {
			geluMulRef(act, y, T, F)
		}
		y = act
	}
	if f.Scale != 0 {
		for i := range y {
			y[i] *= f.Scale
		}
	}
	if f.PostNorm != nil {
		postNorm(y, f.PostNorm, f.PostNormGroup, f.Eps)
	}
	if f.SoftCap > 0 {
		for i, v := range y {
			y[i] = SoftCap(v, f.SoftCap)
		}
	}
	for i := range y {
		if f.Add {
			out[i] += y[i]
		} else {
			out[i] = y[i]
		}
	}
}

// product: out (T, N) = x (T, K) · w (N, K)ᵀ.
func product(out, x, w []float32, T, N, K int) {
	for t := 0; t < T; t++ {
		for n := 0; n < N; n++ {
			var sum float32
			for k := 0; k < K; k++ {
				sum += x[t*K+k] * w[n*K+k]
			}
			out[t*N+n] = sum
		}
	}
}

// qkNorm normalises the H query heads of each row of qkv (T, C) with qw
// (Dh) and the Hk key heads after them with kw (Dh), in place.
func qkNorm(qkv, qw, kw []float32, T, H, Hk, Dh, C int, eps float32) {
	for t := 0; t < T; t++ {
		row := qkv[t*C:]
		rmsNorm(row[:H*Dh], row[:H*Dh], qw, eps)
		rmsNorm(row[H*Dh:(H+Hk)*Dh], row[H*Dh:(H+Hk)*Dh], kw, eps)
	}
}

// rope adds bias (C), when not nil, to each row of x (T, C), then rotates
// the first n = 2*len(invFreq) values of each of the first heads heads (of
// Dh values) of each row at positions pos (T); the head's other values
// pass through (partial rotary). NeoX pairs (i, i+n/2); otherwise adjacent
// pairs (2i, 2i+1). The angle of pair i is pos*invFreq[i]; its cos and sin
// are multiplied by scale (LongRoPE's attention factor; 1: none).
func rope(x []float32, pos []int32, bias []float32, C, heads, Dh int, neox bool, invFreq []float32, scale float32) {
	half := len(invFreq)
	for t, p := range pos {
		if bias != nil {
			row := x[t*C : (t+1)*C]
			for j := range row {
				row[j] += bias[j]
			}
		}
		for h := 0; h < heads; h++ {
			v := x[t*C+h*Dh : t*C+(h+1)*Dh]
			for i := 0; i < half; i++ {
				a := float64(p) * float64(invFreq[i])
				cos, sin := float32(math.Cos(a))*scale, float32(math.Sin(a))*scale
				i0, i1 := 2*i, 2*i+1
				if neox {
					i0, i1 = i, i+half
				}
				x0, x1 := v[i0], v[i1]
				v[i0] = x0*cos - x1*sin
				v[i1] = x0*sin + x1*cos
			}
		}
	}
}

// Attend: for each token t of qkv (T, (H+2Hk)*Dh) and head h, attention
// over the cache positions [0, pos[t]] of kc, vc (S, Hk, Dh) (RoPEKV wrote
// this batch's keys and values there) with scale 1/sqrt(Dh): out (T, H*Dh).
// Query head h reads key/value head h / (H/Hk). window > 0 keeps only the
// last window of those positions, (pos[t]-window, pos[t]] (Mistral's
// sliding window). gated: qkv's rows are (2H+2Hk)*Dh, the last H*Dh the
// output gate, and out is multiplied by sigmoid(gate) (Qwen3.5).
func Attend(out, qkv []float32, pos []int32, kc, vc []float32, T, H, Hk, Dh, window int, gated bool) {
	C := (H + 2*Hk) * Dh
	if gated {
		C += H * Dh
	}
	kvw := Hk * Dh
	scale := 1 / math.Sqrt(float64(Dh))
	group := H / Hk
	for t, p := range pos {
		n := int(p) + 1
		j0 := 0 // the first key attended to
		if window > 0 {
			j0 = max(0, n-window)
		}
		scores := make([]float64, n)
		for h := 0; h < H; h++ {
			q := qkv[t*C+h*Dh : t*C+(h+1)*Dh]
			kh := h / group
			maxS := math.Inf(-1)
			for j := 0; j < n; j++ {
				if j < j0 {
					scores[j] = math.Inf(-1) // outside the sliding window
					continue
				}
				k := kc[j*kvw+kh*Dh : j*kvw+(kh+1)*Dh]
				var dot float32
				for d := range q {
					dot += q[d] * k[d]
				}
				scores[j] = float64(dot) * scale
				maxS = math.Max(maxS, scores[j])
			}
			var sum float64
			for j := range scores {
				scores[j] = math.Exp(scores[j] - maxS)
				sum += scores[j]
			}
			o := out[t*H*Dh+h*Dh : t*H*Dh+(h+1)*Dh]
			for d := range o {
				o[d] = 0
			}
			for j := 0; j < n; j++ {
				wgt := float32(scores[j] / sum)
				v := vc[j*kvw+kh*Dh : j*kvw+(kh+1)*Dh]
				for d := range o {
					o[d] += wgt * v[d]
				}
			}
			if gated {
				g := qkv[t*C+(H+2*Hk)*Dh+h*Dh:]
				for d := range o {
					o[d] *= Sigmoid(g[d])
				}
			}
		}
	}
}

// Sigmoid is 1 / (1 + e^-x).
func Sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(float64(-x)))) }

// RoPEKV: the q/k norm (when qw is not nil), the bias (when not nil) and
// the rotation of the H+Hk query and key heads (their first
// 2*len(invFreq) dims, cos and sin multiplied by scale), in place on qkv
// (T, (H+2Hk)*Dh, + H*Dh of output gate when gated, left as it is), then k
// and v of each token into kc, vc (S, Hk, Dh) at pos.
func RoPEKV(qkv []float32, pos []int32, bias, qw, kw, kc, vc []float32, T, H, Hk, Dh int, eps float32, neox bool, invFreq []float32, scale float32, gated bool) {
	C := (H + 2*Hk) * Dh
	if gated {
		C += H * Dh
	}
	if qw != nil {
		qkNorm(qkv, qw, kw, T, H, Hk, Dh, C, eps)
	}
	rope(qkv, pos, bias, C, H+Hk, Dh, neox, invFreq, scale)
	kvw := Hk * Dh
	for t, p := range pos {
		row := qkv[t*C:]
		copy(kc[int(p)*kvw:(int(p)+1)*kvw], row[H*Dh:(H+Hk)*Dh])
		copy(vc[int(p)*kvw:(int(p)+1)*kvw], row[(H+Hk)*Dh:C])
	}
}

// Shared is an MoE's shared expert on the host: gate_up (2F, D), down
// (D, F), and the gate (D) of its sigmoid scale.
type Shared struct {
	GateUp, Down, Gate []float32
	F                  int
}

// MoEOptions are model.MoEFusion's Gemma 4 parts on host values; the
// zero value is none of them.
type MoEOptions struct {
	Gelu        bool      // the experts are GeGLUs, not SiluMul
	RouterNorm  []float32 // (D): the router reads RMSNorm(res)·RouterNorm; nil: the experts' input
	ExpertScale []float32 // (E): expert e's output times ExpertScale[e]; nil: none
	PostNorm    []float32 // (D): the sum RMS-normalised per row with this weight; nil: none
	Out         []float32 // (T, D): the sum is added here instead of res; nil: res
}

// MoE: res (T, D) += moe(RMSNorm(res) * norm), the sparse MLP on the
// residual stream, plus sigmoid(x·sh.Gate)·sh.Down(SiluMul(sh.GateUp·x))
// when sh is not nil (the shared expert), with o's parts (GeGLU experts,
// the router's own input, per-expert scales, the post-norm, another
// destination) when o is not nil.
func MoE(res, norm []float32, eps float32, router, gateUp, down []float32, T, D, E, F, k int, normTopK bool, sh *Shared, o *MoEOptions) {
	if o == nil {
		o = &MoEOptions{}
	}
	xn := make([]float32, T*D)
	rmsNorm(xn, res, norm, eps)
	xr := xn
	if o.RouterNorm != nil {
		xr = make([]float32, T*D)
		rmsNorm(xr, res, o.RouterNorm, eps)
	}
	y := make([]float32, T*D)
	moe(y, xn, xr, router, gateUp, down, T, D, E, F, k, normTopK, o.Gelu, o.ExpertScale)
	if sh != nil {
		gu := make([]float32, 2*sh.F)
		act := make([]float32, sh.F)
		ys := make([]float32, D)
		var g [1]float32
		for t := 0; t < T; t++ {
			xt := xn[t*D : (t+1)*D]
			product(gu, xt, sh.GateUp, 1, 2*sh.F, D)
			siluMulRef(act, gu, 1, sh.F)
			product(ys, act, sh.Down, 1, D, sh.F)
			product(g[:], xt, sh.Gate, 1, 1, D)
			scale := Sigmoid(g[0])
			for i := range ys {
				y[t*D+i] += scale * ys[i]
			}
		}
	}
	if o.PostNorm != nil {
		postNorm(y, o.PostNorm, 0, eps)
	}
	dst := res
	if o.Out != nil {
		dst = o.Out
	}
	for i := range y {
		dst[i] += y[i]
	}
}

// AddNorm: out (T, D) += RMSNorm(x (T, D)) · w (D).
func AddNorm(out, x, w []float32, eps float32) {
	y := make([]float32, len(x))
	rmsNorm(y, x, w, eps)
	for i := range y {
		out[i] += y[i]
	}
}

// Silu is x * sigmoid(x).
func Silu(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }

// siluMulRef: out (T, F) = silu(gateUp[:, :F]) * gateUp[:, F:].
func siluMulRef(out, gateUp []float32, T, F int) {
	for t := 0; t < T; t++ {
		for i := 0; i < F; i++ {
			out[t*F+i] = Silu(gateUp[t*2*F+i]) * gateUp[t*2*F+F+i]
		}
	}
}

// Route computes one token's top-k experts and weights from router logits
// (E): softmax over all E, the k largest (ties to the lowest index), and
// renormalised to sum 1 when norm is set.
func Route(logits []float32, k int, norm bool, ids []int32, weights []float32) {
	maxL := float32(math.Inf(-1))
	for _, v := range logits {
		maxL = max(maxL, v)
	}
	probs := make([]float64, len(logits))
	var sum float64
	for e, v := range logits {
		probs[e] = math.Exp(float64(v - maxL))
		sum += probs[e]
	}
	used := make([]bool, len(logits))
	var total float64
	for a := 0; a < k; a++ {
		best := -1
		for e := range probs {
			if !used[e] && (best < 0 || probs[e] > probs[best]) {
				best = e
			}
		}
		used[best] = true
		ids[a] = int32(best)
		weights[a] = float32(probs[best] / sum)
		total += probs[best] / sum
	}
	if norm {
		for a := range weights[:k] {
			weights[a] = float32(float64(weights[a]) / total)
		}
	}
}

// moe: for each token of x (T, D), route xr (T, D) with router (E, D),
// then out = Σ_a weight_a · scale[e_a] · down_a (D, F) · act(gateUp_a
// (2F, D) · x), act GeluMul with gelu, else SiluMul; scale nil is ones.
func moe(out, x, xr, router, gateUp, down []float32, T, D, E, F, k int, norm, gelu bool, scale []float32) {
	logits := make([]float32, E)
	ids := make([]int32, k)
	weights := make([]float32, k)
	gu := make([]float32, 2*F)
	act := make([]float32, F)
	y := make([]float32, D)
	for t := 0; t < T; t++ {
		xt := x[t*D : (t+1)*D]
		product(logits, xr[t*D:(t+1)*D], router, 1, E, D)
		Route(logits, k, norm, ids, weights)
		o := out[t*D : (t+1)*D]
		for i := range o {
			o[i] = 0
		}
		for a := 0; a < k; a++ {
			e := int(ids[a])
			product(gu, xt, gateUp[e*2*F*D:(e+1)*2*F*D], 1, 2*F, D)
			if gelu {
				geluMulRef(act, gu, 1, F)
			} else {
				siluMulRef(act, gu, 1, F)
			}
			product(y, act, down[e*D*F:(e+1)*D*F], 1, D, F)
			w := weights[a]
			if scale != nil {
				w *= scale[e]
			}
			for i := range o {
				o[i] += w * y[i]
			}
		}
	}
}

// Argmax: out (T) = index of each row's maximum of logits (T, V), lowest on
// ties. NaN reads as +Inf, and a row whose maximum is +Inf gives -1-i, i
// the lowest index holding NaN or +Inf, so a greedy caller sees it.
func Argmax(out []int32, logits []float32, T, V int) {
	for t := 0; t < T; t++ {
		row := logits[t*V : (t+1)*V]
		best, bv := 0, nanAsInf(row[0])
		for i, v := range row {
			if v = nanAsInf(v); v > bv {
				best, bv = i, v
			}
		}
		if bv > math.MaxFloat32 {
			best = -1 - best
		}
		out[t] = int32(best)
	}
}

// MaskLogits sets to -Inf, in place, each logit of logits (T, V) whose bit
// is clear in mask (ceil(V/32) words, bit id%32 of word id/32, the same
// mask for every row): structured output's allowed tokens.
func MaskLogits(logits []float32, mask []int32, T, V int) {
	ninf := float32(math.Inf(-1))
	for t := 0; t < T; t++ {
		row := logits[t*V : (t+1)*V]
		for i := range row {
			if uint32(mask[i>>5])>>(i&31)&1 == 0 {
				row[i] = ninf
			}
		}
	}
}

// nanAsInf reads a NaN logit as +Inf, so that Argmax and TopK rank every
// non-finite logit first (lowest index among them) and the sampler sees it.
func nanAsInf(v float32) float32 {
	if v != v {
		return float32(math.Inf(1))
	}
	return v
}

// TopK writes each row's k largest values in descending order, ties to the
// lowest index: logits (T, V) -> ids, vals (T, k). NaN reads as +Inf.
func TopK(ids []int32, vals []float32, logits []float32, T, V, k int) {
	for t := 0; t < T; t++ {
		row := logits[t*V : (t+1)*V]
		used := make([]bool, V)
		for a := 0; a < k; a++ {
			best := -1
			for i, v := range row {
				if !used[i] && (best < 0 || nanAsInf(v) > nanAsInf(row[best])) {
					best = i
				}
			}
			used[best] = true
			ids[t*k+a] = int32(best)
			vals[t*k+a] = nanAsInf(row[best])
		}
	}
}

// DotKQuant is row · x for one row of K-quant blocks of type dt (Q2_K ..
// Q6_K, ggml's layout) and x (K): the row dequantised as ggml does, then a
// plain loop. The backend's dotQ2K .. dotQ6K (kquant.go) are checked
// against it.
func DotKQuant(dt loader.DType, row []byte, x []float32) float32 {
	w := make([]float32, len(x))
	if err := loader.Dequantize(dt, row, w); err != nil {
		panic("cpu: DotKQuant: " + err.Error())
	}
	var sum float32
	for k := range x {
		sum += w[k] * x[k]
	}
	return sum
}
