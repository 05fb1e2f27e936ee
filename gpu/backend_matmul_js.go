//go:build js

package gpu

import (
	"wasmllm/loader"
	"wasmllm/model"
)

// gemvMaxT is the largest T that MatMul runs as GEMV dispatches; larger
// batches take the tiled GEMM. Chosen by BenchmarkMatMulCrossover.
const gemvMaxT = 8

// gemvMaxTB is the most tokens one GEMV workgroup carries (MAXTB in
// shaders/matmul_gemv.wgsl): each weight chunk it loads serves them all.
const gemvMaxTB = 4

// gemvChunk is the number of values of each weight dtype in the 16-byte chunk
// a GEMV thread loads.
func gemvChunk(dt loader.DType) int {
	switch dt {
	case loader.F16:
		return 8
	case loader.Q8:
		return 16
	case loader.Q4:
		return 32
	}
	return 4
}

// MatMul implements model.Backend: out (T, N) = x (T, K) · wᵀ, one dispatch
// per row-part of w, each writing out's columns [row0, row0+rows).
func (b *Backend) MatMul(out, x, w model.Tensor) {
	o, xt, wt := tt(out), tt(x), tt(w)
	N, K := wt.rows(), wt.cols()
	T := xt.rows()
	switch {
	case len(wt.parts) == 0:
		b.opErr("MatMul", "weight %v is not an uploaded weight", wt.shape)
		return
	case xt.buf == nil || o.buf == nil:
		b.opErr("MatMul", "x %v and out %v must be activations", xt.shape, o.shape)
		return
	case xt.dtype != loader.F32 || o.dtype != loader.F32:
		b.opErr("MatMul", "x %s and out %s must be F32", xt.dtype, o.dtype)
		return
	case xt.cols() != K:
		b.opErr("MatMul", "x %v against weight %v: K differs", xt.shape, wt.shape)
		return
	case o.cols() != N || o.rows() != T:
		b.opErr("MatMul", "out %v, want (%d, %d) for x %v and weight %v", o.shape, T, N, xt.shape, wt.shape)
		return
	case o.buf == xt.buf:
		b.opErr("MatMul", "out and x are the same tensor")
		return
	case (wt.dtype == loader.Q8 || wt.dtype == loader.Q4) && K%32 != 0:
		b.opErr("MatMul", "%s weight %v: K not a multiple of 32", wt.dtype, wt.shape)
		return
	}
	if T == 0 || N == 0 {
		return
	}
	if T <= gemvMaxT && K%gemvChunk(wt.dtype) == 0 {
		b.gemv(o, xt, wt, T, N, K)
		return
	}
	b.gemm(o, xt, wt, T, N, K)
}

// gemvShape picks the GEMV's workgroup: wg threads along K (enough for one
// pass over a row where possible), r rows and tb tokens per workgroup.
func (b *Backend) gemvShape(dt loader.DType, T, K int) (wg, r, tb int) {
	chunks := K / gemvChunk(dt)
	wg = 32
	for wg < chunks && wg < 256 {
		wg *= 2
	}
	tb = min(T, gemvMaxTB)
	r = 8
	if tb > 2 {
		r = 4
	}
	// the shared-memory reduction holds r*tb*wg floats without subgroups
	for r*tb*wg*4 > min(16384, b.d.Limits.MaxComputeWorkgroupStorageSize) && wg > 32 {
		wg /= 2
	}
	if lim := b.d.Limits.MaxComputeInvocationsPerWorkgroup; lim > 0 && wg > lim {
		wg = lim
	}
	return wg, r, tb
}

func (b *Backend) gemv(o, xt, wt *tensor, T, N, K int) {
	wg, r, tb := b.gemvShape(wt.dtype, T, K)
	wty := wtype(wt.dtype)
	k, err := b.kernel(kernelKey{file: "matmul_gemv.wgsl", entry: "main", consts: [4]constant{
		{"WTYPE", float64(wty)}, {"WG", float64(wg)}, {"R", float64(r)}, {"TB", float64(tb)}}}, 4, 3)
	if err != nil {
		b.fail(err)
		return
	}
	chunks := K / gemvChunk(wt.dtype)
	for _, p := range wt.parts {
		gx, gy := b.groups2D((p.rows + r - 1) / r)
		b.dispatch(k, Params{uint32(N), uint32(K), uint32(p.row0), uint32(p.rows), uint32(T), uint32(chunks)},
			gx, gy, (T+tb-1)/tb,
			bind{buf: p.data}, bind{buf: p.scales}, xt.whole(), o.whole())
	}
}

// gemm tile sizes: BN weight rows by BM tokens (shaders/matmul_gemm.wgsl).
const gemmBN, gemmBM = 64, 64

func (b *Backend) gemm(o, xt, wt *tensor, T, N, K int) {
	k, err := b.kernel(kernelKey{file: "matmul_gemm.wgsl", entry: "main", consts: [4]constant{
		{"WTYPE", float64(wtype(wt.dtype))}}}, 4, 3)
	if err != nil {
		b.fail(err)
		return
	}
	for _, p := range wt.parts {
		b.dispatch(k, Params{uint32(N), uint32(K), uint32(p.row0), uint32(p.rows), uint32(T)},
			(p.rows+gemmBN-1)/gemmBN, (T+gemmBM-1)/gemmBM, 1,
			bind{buf: p.data}, bind{buf: p.scales}, xt.whole(), o.whole())
	}
}
