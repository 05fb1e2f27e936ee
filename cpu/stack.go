package cpu

import (
	"fmt"

	"wasmllm/loader"
	"wasmllm/model"
)

// StackRows implements model.RowStacker: a weight of row blocks, each in
// its own type (Q4_K_M's attn_qkv: Q4_K q and k, Q6_K v). MatMul runs each
// block's product in its type (its Go, AVX2 or SIMD128 kernel, split
// across ranks as any weight is) into its columns of the output, then the
// fused epilogue over the whole row.
func (b *Backend) StackRows(parts []model.Tensor) (model.Tensor, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("cpu: StackRows of no parts")
	}
	K, N := t(parts[0]).cols(), 0
	st := &tensor{dtype: loader.Mixed}
	for _, p := range parts {
		pt := t(p)
		if len(pt.shape) != 2 || pt.cols() != K || pt.dtype == loader.Mixed {
			return nil, fmt.Errorf("cpu: StackRows: part %v %s is not a (N, %d) matrix of one type", pt.shape, pt.dtype, K)
		}
		N += pt.shape[0]
		st.stack = append(st.stack, pt)
	}
	st.shape = []int{N, K}
	return st, nil
}

// matmulStack sets out (T, N) = x (T, K) · wᵀ for a stacked w: each block's
// product into its columns, straight into out for one token, through a
// scratch (T, N_i) for more.
func (b *Backend) matmulStack(out, x []float32, w *tensor, T, N, K int) {
	off := 0
	for _, p := range w.stack {
		n := p.shape[0]
		if T == 1 {
			b.matmul(out[off:off+n], x, p, 1, n, K)
			off += n
			continue
		}
		if cap(b.stackY) < T*n {
			b.stackY = make([]float32, T*n)
		}
		y := b.stackY[:T*n]
		b.matmul(y, x, p, T, n, K)
		for r := range T {
			copy(out[r*N+off:r*N+off+n], y[r*n:(r+1)*n])
		}
		off += n
	}
}
