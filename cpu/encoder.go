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
func (b *Backend) Rope(x, pos model.Tensor, heads, headDim int, r *model.RoPE) {
	xt := t(x)
	b.rope(xt.f, t(pos).i, nil, xt.cols(), heads, headDim, r.NeoX, r.InvFreq)
}

// seqAttnTask runs bidirectional attention for (token, head) pairs [lo, hi).
type seqAttnTask struct {
	out, qkv []float32
	seq      []int32
	// start[t], end[t]: the rows of t's sequence (a batch's sequences are
	// contiguous).
	start, end []int32
	H, Dh      int
	scores     [][]float32
}

func (a *seqAttnTask) run(worker, lo, hi int) {
	H, Dh := a.H, a.Dh
	C := 3 * H * Dh
	scale := float32(1 / math.Sqrt(float64(Dh)))
	for th := lo; th < hi; th++ {
		tk, h := th/H, th%H
		u0, u1 := int(a.start[tk]), int(a.end[tk])
		q := a.qkv[tk*C+h*Dh : tk*C+(h+1)*Dh]
		s := a.scores[worker][:u1-u0]
		maxS := float32(math.Inf(-1))
		for j := range s {
			u := u0 + j
			s[j] = dotF32(q, a.qkv[u*C+H*Dh+h*Dh:u*C+H*Dh+(h+1)*Dh]) * scale
			maxS = max(maxS, s[j])
		}
		var sum float32
		for j := range s {
			s[j] = expf(s[j] - maxS)
			sum += s[j]
		}
		o := a.out[tk*H*Dh+h*Dh : tk*H*Dh+(h+1)*Dh]
		clear(o)
		inv := 1 / sum
		for j := range s {
			w := s[j] * inv
			v := a.qkv[(u0+j)*C+2*H*Dh+h*Dh:]
			for d := range o {
				o[d] += w * v[d]
			}
		}
	}
}

// AttendSeq implements model.EncoderOps. A batch's sequences are
// contiguous runs of seq; a token attends to its run.
func (b *Backend) AttendSeq(out, qkv, seq model.Tensor, heads, headDim int) {
	sq := t(seq).i
	T := len(sq)
	start, end := make([]int32, T), make([]int32, T)
	for i := 0; i < T; {
		j := i
		for j < T && sq[j] == sq[i] {
			j++
		}
		for k := i; k < j; k++ {
			start[k], end[k] = int32(i), int32(j)
		}
		i = j
	}
	var longest int
	for i := range start {
		longest = max(longest, int(end[i]-start[i]))
	}
	a := &seqAttnTask{out: t(out).f, qkv: t(qkv).f, seq: sq, start: start, end: end, H: heads, Dh: headDim}
	b.workerBufs(&a.scores, longest)
	b.pool.Run(a, T*heads, max(1, minWork/max(1, longest*headDim*2)))
}

// Pool implements model.EncoderOps.
func (b *Backend) Pool(out, x, bounds model.Tensor, mode model.Pooling) {
	xt := t(x)
	Pool(t(out).f, xt.f, t(bounds).i, xt.cols(), mode)
}
