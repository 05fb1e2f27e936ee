package cpu

import "wasmllm/loader"

// simdKernels are the wasm SIMD128 kernels (cpu/internal/wasmsimd), set in js
// builds once the module is loaded; nil otherwise, and then the plain-Go
// loops of the same names run. Each computes what those loops compute,
// bit for bit.
type simdKernels interface {
	// gemv sets out[i] = w[row+i] · x for i < rows, for weights of a
	// type it has (has).
	gemv(w *tensor, row, rows int, x, out []float32)
	// f32 sets out[t*ldo+i] = w[i] · x[t] for w (rows, K), x (T, K).
	f32(w, x, out []float32, rows, K, T, ldo int)
	// attn is a.run(worker, lo, hi) (Dh a multiple of 4).
	attn(a *attnTask, worker, lo, hi int)
	// silu is siluMul's first F&^3 columns of each row.
	silu(out, gateUp []float32, T, F int)
	// batch makes the calls, in order, in one call into the module.
	batch(calls []kcall)
	has(d loader.DType) bool
	// dequants reports whether batch has a dequantisation kernel for d.
	dequants(d loader.DType) bool
}

var simd simdKernels

// kcall is one kernel call of a batch.
type kcall struct {
	op     kop
	w      *tensor   // opGemv, opDequant: rows [row, row+rows) of w
	row    int       //
	f      []float32 // opF32: the weights (rows, K)
	x, out []float32
	rows   int
	K      int
	T, ldo int // opF32
}

type kop int8

const (
	opF32     kop = iota // f32: out[t*ldo+i] = f[i] · x[t]
	opGemv               // gemv: out[i] = w[row+i] · x
	opDequant            // out (rows, K) = w's rows, as w.row gives them
)

// batchable reports whether a matmul of w with K inputs can run as a batch
// of SIMD kernel calls (matmulTask.batch).
func batchable(w *tensor, K int) bool {
	if simd == nil {
		return false
	}
	switch {
	case w.dtype == loader.F32:
		return K%4 == 0
	case kquant(w.dtype):
		return simd.dequants(w.dtype) && K%256 == 0
	}
	return simd.has(w.dtype) && K%32 == 0
}

// decodeRows reports whether a matmul of under four tokens with w reads
// its rows one dot product at a time (gemvRows); else it dequantises 16
// rows at a time as prefill does. K-quants take tiles in js builds, where
// the SIMD kernels dequantise them (their Go dot products have no SIMD
// twin) and the plain-Go fallback does the same, so both give the same
// bits; natively they keep their fused Go dot products.
func decodeRows(w *tensor) bool {
	return !(kquantTiles && kquant(w.dtype))
}

// gemm is gemmF32, on the SIMD kernel when there is one.
func gemm(w, x, out []float32, rows, K, T, ldo int) {
	if simd != nil && K%4 == 0 {
		simd.f32(w, x, out, rows, K, T, ldo)
		return
	}
	gemmF32(w, x, out, rows, K, T, ldo)
}

// gemvRows sets out[i] = w[row+i] · x for i < len(out): one SIMD call
// where the kernels have w's type, else the Go dot per row (the same
// bits either way).
func gemvRows(w *tensor, row int, x, out []float32) {
	K := len(x)
	switch {
	case w.dtype == loader.F32:
		gemm(w.f[row*K:(row+len(out))*K], x, out, len(out), K, 1, len(out))
	case simd != nil && simd.has(w.dtype) && K%32 == 0:
		simd.gemv(w, row, len(out), x, out)
	default:
		for n := range out {
			out[n] = w.dot(row+n, x)
		}
	}
}

// SIMD reports whether the matmuls run on the wasm SIMD128 kernels (js
// builds whose page handed the memory over) rather than the Go loops.
func SIMD() bool { return simd != nil }
