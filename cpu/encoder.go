package cpu

import (
	"math"

	"wasmllm/model"
)

var _ model.EncoderOps = (*Backend)(nil)

// rowsTask runs fn over row ranges across the workers.
type rowsTask struct{ fn func(lo, hi int) }

func (r *rowsTask) run(_, lo, hi int) { r.fn(lo, hi) }

// AddBias implements model.EncoderOps: the reference's loop, rows across
// the workers.
func (b *Backend) AddBias(x, bias model.Tensor, gelu bool) {
	xt := t(x)
	N := xt.cols()
	bv := t(bias).f
	b.pool.Run(&rowsTask{func(lo, hi int) { AddBias(xt.f[lo*N:hi*N], bv, hi-lo, N, gelu) }}, len(xt.f)/N, max(1, minWork/(16*N)))
}

// LayerNorm implements model.EncoderOps: the reference's loop, rows across
// the workers.
func (b *Backend) LayerNorm(x, add, w, bias model.Tensor, eps float32) {
	xt := t(x)
	D := xt.cols()
	var a []float32
	if add != nil {
		a = t(add).f
	}
	wv, bv := t(w).f, t(bias).f
	b.pool.Run(&rowsTask{func(lo, hi int) {
		var al []float32
		if a != nil {
			al = a[lo*D : hi*D]
		}
		LayerNorm(xt.f[lo*D:hi*D], al, wv, bv, hi-lo, D, eps)
	}}, len(xt.f)/D, max(1, minWork/(8*D)))
}

// Rope implements model.EncoderOps.
func (b *Backend) Rope(x, pos, qw, kw model.Tensor, heads, kvHeads, headDim int, eps float32, r *model.RoPE) {
	xt := t(x)
	if qw != nil {
		qkNorm(xt.f, t(qw).f, t(kw).f, xt.shape[0], heads, kvHeads, headDim, xt.cols(), eps)
	}
	b.rope(xt.f, t(pos).i, nil, xt.cols(), heads+kvHeads, headDim, r.NeoX, r.InvFreq, r.CosSinScale())
}

// seqAttnTask runs bidirectional attention for (sequence, head) pairs
// [lo, hi) as two products on the matmul kernel (SIMD where there is
// one): the scores S = Q·Kᵀ (L, L), softmax per row (scores outside the
// window Radius dropped), then O = P·V.
type seqAttnTask struct {
	out, qkv []float32
	// bounds: each sequence's rows [start, end)
	bounds    []int32
	H, Hk, Dh int
	Radius    int
	Causal    bool
	bufs      [][]float32 // per worker: Q, K, Vᵀ (L·Dh each), S (L·L), O (L·Dh)
}

// keys returns the rows [lo, hi) that row t of a sequence of L rows
// attends to.
func (a *seqAttnTask) keys(t, L int) (lo, hi int) {
	lo, hi = 0, L
	if a.Radius > 0 {
		lo, hi = max(0, t-a.Radius), min(L, t+a.Radius+1)
	}
	if a.Causal {
		hi = min(hi, t+1)
	}
	return lo, hi
}

func (a *seqAttnTask) run(worker, lo, hi int) {
	H, Hk, Dh := a.H, a.Hk, a.Dh
	C := (H + 2*Hk) * Dh
	g0 := H / Hk
	scale := float32(1 / math.Sqrt(float64(Dh)))
	for sh := lo; sh < hi; sh++ {
		s, h := sh/H, sh%H
		u0, u1 := int(a.bounds[2*s]), int(a.bounds[2*s+1])
		L := u1 - u0
		buf := a.bufs[worker]
		q, k, vt := buf[:L*Dh], buf[L*Dh:2*L*Dh], buf[2*L*Dh:3*L*Dh]
		sc, o := buf[3*L*Dh:3*L*Dh+L*L], buf[3*L*Dh+L*L:4*L*Dh+L*L]
		for j := range L {
			row := a.qkv[(u0+j)*C:]
			copy(q[j*Dh:(j+1)*Dh], row[h*Dh:(h+1)*Dh])
			g := h / g0
			copy(k[j*Dh:(j+1)*Dh], row[H*Dh+g*Dh:H*Dh+(g+1)*Dh])
			for d := range Dh {
				vt[d*L+j] = row[(H+Hk)*Dh+g*Dh+d]
			}
		}
		gemm(k, q, sc, L, Dh, L, L) // sc[t*L+j] = k[j]·q[t]
		for t := range L {
			r := sc[t*L : (t+1)*L]
			maxS := float32(math.Inf(-1))
			lo, hi := a.keys(t, L)
			clear(r[:lo])
			clear(r[hi:])
			r = r[lo:hi]
			for j := range r {
				r[j] *= scale
				maxS = max(maxS, r[j])
			}
			var sum float32
			for j := range r {
				r[j] = expf(r[j] - maxS)
				sum += r[j]
			}
			inv := 1 / sum
			for j := range r {
				r[j] *= inv
			}
		}
		gemm(vt, sc, o, Dh, L, L, Dh) // o[t*Dh+d] = vᵀ[d]·p[t]
		for t := range L {
			copy(a.out[(u0+t)*H*Dh+h*Dh:(u0+t)*H*Dh+(h+1)*Dh], o[t*Dh:(t+1)*Dh])
		}
	}
}

// AttendSeq implements model.EncoderOps. A batch's sequences are
// contiguous runs of seq; a token attends to its run.
func (b *Backend) AttendSeq(out, qkv, seq model.Tensor, heads, kvHeads, headDim, radius int, causal bool) {
	sq := t(seq).i
	T := len(sq)
	var bounds []int32
	longest := 0
	for i := 0; i < T; {
		j := i
		for j < T && sq[j] == sq[i] {
			j++
		}
		bounds = append(bounds, int32(i), int32(j))
		longest = max(longest, j-i)
		i = j
	}
	a := &seqAttnTask{out: t(out).f, qkv: t(qkv).f, bounds: bounds, H: heads, Hk: kvHeads, Dh: headDim, Radius: radius, Causal: causal}
	b.workerBufs(&a.bufs, 4*longest*headDim+longest*longest)
	b.pool.Run(a, len(bounds)/2*heads, 1)
}

// Pool implements model.EncoderOps.
func (b *Backend) Pool(out, x, bounds model.Tensor, mode model.Pooling) {
	xt := t(x)
	Pool(t(out).f, xt.f, t(bounds).i, xt.cols(), mode)
}
