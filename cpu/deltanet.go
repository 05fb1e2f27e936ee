package cpu

import (
	"math"

	"wasmllm/model"
)

// deltaChunk is the tokens of one chunk of a prefill's chunked Gated
// DeltaNet (llama.cpp's build_delta_net_chunking and
// flash-linear-attention use 64).
const deltaChunk = 64

// deltaTask runs the Gated DeltaNet recurrence of value heads [lo, hi) over
// a batch whose conv, activations and gates are done (Backend.DeltaNet):
// one token by the recurrence, more in chunks by the WY form.
type deltaTask struct {
	act      []float32 // (T, ConvDim): silu(conv), q and k L2-normalised, q scaled by 1/sqrt(S)
	beta, g  []float32 // (T, n_v): sigmoid(beta), a·softplus(alpha + dtBias)
	proj     []float32 // (T, W): z is read from it
	out      []float32 // (T, n_v·S)
	state    []float32 // (n_v, S, S)
	norm     []float32 // (S)
	T, nk, S int
	nv, W    int
	eps      float32
	buf      [][]float32 // per worker: deltaBufLen(S)
}

// deltaBufLen is a worker's scratch for one head: the chunk's q·e^G, k,
// U and W (then v_new), the output rows, A, G and a row of S.
func deltaBufLen(S int) int { return 5*deltaChunk*S + deltaChunk*deltaChunk + deltaChunk + S }

func (d *deltaTask) run(worker, lo, hi int) {
	for j := lo; j < hi; j++ {
		d.head(worker, j)
	}
}

// head runs value head j over every token, then its gated RMSNorm.
func (d *deltaTask) head(worker, j int) {
	S, C := d.S, deltaChunk
	buf := d.buf[worker]
	qe, ks, u, w, o := buf[:C*S], buf[C*S:2*C*S], buf[2*C*S:3*C*S], buf[3*C*S:4*C*S], buf[4*C*S:5*C*S]
	A, G, row := buf[5*C*S:5*C*S+C*C], buf[5*C*S+C*C:5*C*S+C*C+C], buf[5*C*S+C*C+C:5*C*S+C*C+C+S]
	M := d.state[j*S*S : (j+1)*S*S]
	for t0 := 0; t0 < d.T; t0 += C {
		n := min(C, d.T-t0)
		if n == 1 {
			d.step(M, j, t0, o[:S], row)
		} else {
			d.chunk(M, j, t0, n, qe, ks, u, w, o, A, G)
		}
		inner := d.nv * S
		for i := range n {
			t := t0 + i
			y := d.out[t*inner+j*S : t*inner+(j+1)*S]
			rmsNorm(y, o[i*S:(i+1)*S], d.norm, d.eps)
			z := d.proj[t*d.W+d.nk*2*S+inner+j*S:]
			for c := range y {
				y[c] *= silu(z[c])
			}
		}
	}
}

// qkv returns token t's q and k (of value head j's key head) and v.
func (d *deltaTask) qkv(t, j int) (q, k, v []float32) {
	S, kh := d.S, j%d.nk
	a := d.act[t*(2*d.nk+d.nv)*S:]
	return a[kh*S : (kh+1)*S], a[(d.nk+kh)*S : (d.nk+kh+1)*S], a[(2*d.nk+j)*S : (2*d.nk+j+1)*S]
}

// step is the recurrence for token t (the reference's order): decay,
// delta rule, read-out into o (S).
func (d *deltaTask) step(M []float32, j, t int, o, dv []float32) {
	S := d.S
	q, k, v := d.qkv(t, j)
	decay, beta := expf(d.g[t*d.nv+j]), d.beta[t*d.nv+j]
	if simd != nil && S%4 == 0 {
		simd.deltaStep(M, k, v, q, o, dv, decay, beta)
		return
	}
	clear(dv)
	for r := range S {
		m := M[r*S : (r+1)*S]
		for c := range m {
			m[c] *= decay
		}
		axpy(dv, m, k[r])
	}
	for c := range dv {
		dv[c] = beta * (v[c] - dv[c])
	}
	clear(o)
	for r := range S {
		m := M[r*S : (r+1)*S]
		axpy(m, dv, k[r])
		axpy(o, m, q[r])
	}
}

// chunk runs n tokens from t0 in the WY form: with G the decays' running
// sums in the chunk, A[i][l] = beta_i (k_i·k_l) e^(G_i−G_l) for l < i,
// (I + A) U = beta⊙v and (I + A) W = beta⊙e^G⊙k by forward substitution,
// v_new = U − W·M, o = (q⊙e^G)·M + Σ_(l≤i) (q_i·k_l) e^(G_i−G_l) v_new_l,
// and M ← e^(G_n) M + Σ_i e^(G_n−G_i) k_i ⊗ v_new_i. It is the recurrence
// regrouped (model.Backend.DeltaNet).
func (d *deltaTask) chunk(M []float32, j, t0, n int, qe, ks, u, w, o, A, G []float32) {
	S := d.S
	var sum float32
	for i := range n {
		sum += d.g[(t0+i)*d.nv+j]
		G[i] = sum
	}
	for i := range n {
		q, k, v := d.qkv(t0+i, j)
		beta, eg := d.beta[(t0+i)*d.nv+j], expf(G[i])
		copy(ks[i*S:(i+1)*S], k)
		for c := range S {
			qe[i*S+c] = q[c] * eg
			u[i*S+c] = beta * v[c]
			w[i*S+c] = beta * eg * k[c]
		}
		for l := range i {
			A[i*deltaChunk+l] = beta * dotF32(k, ks[l*S:(l+1)*S]) * expf(G[i]-G[l])
		}
	}
	// forward substitution, row by row: U_i -= A_il U_l, W_i -= A_il W_l
	for i := 1; i < n; i++ {
		ui, wi := u[i*S:(i+1)*S], w[i*S:(i+1)*S]
		for l := range i {
			axpy(ui, u[l*S:(l+1)*S], -A[i*deltaChunk+l])
			axpy(wi, w[l*S:(l+1)*S], -A[i*deltaChunk+l])
		}
	}
	// v_new = U − W·M (into u) and the state's part of o, both against the
	// incoming state
	for i := range n {
		oi, ui, wi, qi := o[i*S:(i+1)*S], u[i*S:(i+1)*S], w[i*S:(i+1)*S], qe[i*S:(i+1)*S]
		clear(oi)
		for r := range S {
			m := M[r*S : (r+1)*S]
			axpy(ui, m, -wi[r])
			axpy(oi, m, qi[r])
		}
	}
	// the chunk's own part of o: (q_i·k_l) e^(G_i−G_l), l ≤ i (qe carries e^G_i)
	for i := range n {
		q, _, _ := d.qkv(t0+i, j)
		oi := o[i*S : (i+1)*S]
		for l := 0; l <= i; l++ {
			axpy(oi, u[l*S:(l+1)*S], dotF32(q, ks[l*S:(l+1)*S])*expf(G[i]-G[l]))
		}
	}
	// M ← e^(G_n) M + Σ_i e^(G_n−G_i) k_i ⊗ v_new_i
	last := expf(G[n-1])
	for i := range n {
		f := expf(G[n-1] - G[i])
		k := ks[i*S : (i+1)*S]
		for c := range k {
			k[c] *= f
		}
	}
	for r := range S {
		m := M[r*S : (r+1)*S]
		for c := range m {
			m[c] *= last
		}
		for i := range n {
			axpy(m, u[i*S:(i+1)*S], ks[i*S+r])
		}
	}
}

// axpy sets y += a·x.
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

// DeltaNet implements model.Backend: the conv, the activations and the
// gates over the batch here, then the value heads across the workers (one
// token by the recurrence, more in chunks of 64 by the WY form).
func (b *Backend) DeltaNet(out, proj, convW, a, dtBias, norm, convState, state model.Tensor, sp model.DeltaNetSpec, eps float32) {
	p := t(proj)
	nk, nv, S, K := sp.KeyHeads, sp.ValueHeads, sp.HeadDim, sp.ConvKernel
	convDim, W := sp.ConvDim(), sp.ProjWidth()
	T := p.numel() / p.cols()
	d := &b.delta
	if cap(d.act) < T*convDim {
		d.act = make([]float32, T*convDim)
	}
	if cap(d.beta) < T*nv {
		d.beta, d.g = make([]float32, T*nv), make([]float32, T*nv)
	}
	act, beta, g := d.act[:T*convDim], d.beta[:T*nv], d.g[:T*nv]
	deltaConv(act, p.f, t(convW).f, t(convState).f, T, convDim, W, K)
	scale := float32(1 / math.Sqrt(float64(S)))
	av, dt := t(a).f, t(dtBias).f
	for tk := range T {
		x := act[tk*convDim : (tk+1)*convDim]
		for i := range x {
			x[i] = silu(x[i])
		}
		l2Norm(x[:2*nk*S], S, eps)
		for i := range x[:nk*S] {
			x[i] *= scale
		}
		r := p.f[tk*W+convDim+nv*S:]
		for j := range nv {
			beta[tk*nv+j] = 1 / (1 + expf(-r[j]))
			g[tk*nv+j] = av[j] * softplus(r[nv+j]+dt[j])
		}
	}
	b.workerBufs(&d.buf, deltaBufLen(S))
	*d = deltaTask{act: act, beta: beta, g: g, proj: p.f, out: t(out).f, state: t(state).f, norm: t(norm).f,
		T: T, nk: nk, nv: nv, S: S, W: W, eps: eps, buf: d.buf}
	b.pool.Run(d, nv, max(1, minWork/max(1, 4*T*S*S)))
}

// deltaConv sets act (T, convDim) to the causal depthwise conv of the
// first convDim columns of proj's rows (T, W) after the K-1 rows of
// state ((K-1), convDim), with w (convDim, K), and leaves the last K-1
// rows in state.
func deltaConv(act, proj, w, state []float32, T, convDim, W, K int) {
	in := func(r, c int) float32 { // row r of [state; proj]
		if r < K-1 {
			return state[r*convDim+c]
		}
		return proj[(r-(K-1))*W+c]
	}
	for tk := range T {
		x := act[tk*convDim : (tk+1)*convDim]
		for c := range x {
			var sum float32
			for i := range K {
				sum += in(tk+i, c) * w[c*K+i]
			}
			x[c] = sum
		}
	}
	// the new state: rows T..T+K-2 of [state; proj], in order (each row
	// read before it is overwritten: row r goes to r-T < r)
	for r := range K - 1 {
		src := T + r
		if src < K-1 {
			copy(state[r*convDim:(r+1)*convDim], state[src*convDim:(src+1)*convDim])
		} else {
			copy(state[r*convDim:(r+1)*convDim], proj[(src-(K-1))*W:(src-(K-1))*W+convDim])
		}
	}
}
