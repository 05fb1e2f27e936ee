//go:build js

package gpu

import (
	"fmt"

	"wasmllm/loader"
	"wasmllm/model"
)

// StackRows implements model.RowStacker: a weight of row blocks, each in
// its own type (Q4_K_M's attn_qkv: Q4_K q and k rows, Q6_K v rows). Each
// block becomes a view of the whole (N, K) weight holding only its own
// row-parts, shifted to its rows; MatMul runs each view's kernel (its
// type's GEMV or GEMM), writing its rows of the output (matmulStack).
func (b *Backend) StackRows(parts []model.Tensor) (model.Tensor, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("gpu: StackRows of no parts")
	}
	K, N := tt(parts[0]).cols(), 0
	for _, p := range parts {
		pt := tt(p)
		if len(pt.shape) != 2 || pt.cols() != K || pt.dtype == loader.Mixed || len(pt.parts) == 0 {
			return nil, fmt.Errorf("gpu: StackRows: part %v %s is not an uploaded (N, %d) weight of one type", pt.shape, pt.dtype, K)
		}
		N += pt.shape[0]
	}
	st := &tensor{shape: []int{N, K}, dtype: loader.Mixed}
	off := 0
	for _, p := range parts {
		pt := tt(p)
		v := &tensor{shape: st.shape, dtype: pt.dtype}
		for _, q := range pt.parts {
			q.row0 += off
			v.parts = append(v.parts, q)
		}
		st.stack = append(st.stack, v)
		st.parts = append(st.parts, v.parts...) // Free destroys them
		off += pt.shape[0]
		pt.parts = nil // the stack owns the buffers now
	}
	return st, nil
}

// matmulStack is MatMul (norm, SiluMul, add) for a stacked weight: the
// norm once into a scratch, then one product per row block in its own
// kernel, each writing its rows of out (or of the gate_up scratch that
// SiluMul reads). A decode step's mixed attn_qkv of K-quants is three
// dispatches (norm, two blocks) where one type's is two.
func (b *Backend) matmulStack(o, xt, wt *tensor, T, N, K int, nw *tensor, f model.MatMulFusion) {
	in := xt
	if nw != nil {
		if in = b.scratchAct(&b.ops.fused.xn, "fused norm", T, K); in == nil {
			return
		}
		b.rmsNorm(in, xt, nw, f.Eps)
	}
	dst := o
	if f.SiluMul {
		if f.Add {
			b.opErr("MatMul", "SiluMul with Add is not fused")
			return
		}
		if dst = b.scratchAct(&b.ops.fused.gu, "fused gate_up", T, N); dst == nil {
			return
		}
	}
	for _, v := range wt.stack {
		b.MatMul(dst, in, v, model.MatMulFusion{Add: f.Add && !f.SiluMul})
	}
	if f.SiluMul {
		b.siluMul(o, dst)
	}
}
