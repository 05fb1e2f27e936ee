package cpu

import "wasmllm/loader"

// simdKernels are the wasm SIMD128 kernels (cpu/internal/wasmsimd), set in js
// builds once the module is loaded; nil otherwise, and then the plain-Go
// loops of the same names run (natively, the AVX2 kernels where nativeSIMD
// says so). Each computes what those loops compute, bit for bit.
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
	// deltaStep is deltaTask.step's recurrence of one value head's state
	// M (S, S) for one token: key k, value v, query q, read-out o, scratch
	// dv (S each, S a multiple of 4).
	deltaStep(M, k, v, q, o, dv []float32, decay, beta float32)
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
	switch {
	case simd != nil && K%4 == 0:
		simd.f32(w, x, out, rows, K, T, ldo)
	case nativeSIMD && K%4 == 0:
		gemmNative(w, x, out, rows, K, T, ldo)
	default:
		gemmF32(w, x, out, rows, K, T, ldo)
	}
}

// dequantRows sets tile (rows, K) to rows [row, row+rows) of w, as w.row
// does, on the native kernel when there is one for w's type.
func dequantRows(w *tensor, row, rows, K int, tile []float32) {
	if nativeSIMD && nativeGemv(w.dtype) && K%32 == 0 {
		dequantNative(w, row, rows, K, tile)
		return
	}
	for i := range rows {
		w.row(row+i, tile[i*K:(i+1)*K])
	}
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
	case nativeSIMD && nativeGemv(w.dtype) && K%32 == 0:
		gemvNative(w, row, len(out), x, out)
	default:
		for n := range out {
			out[n] = w.dot(row+n, x)
		}
	}
}

// SIMD reports whether the matmuls run on SIMD kernels rather than the Go
// loops: the wasm SIMD128 module in js builds whose page handed the memory
// over, the AVX2 kernels (simd_amd64.s) natively.
func SIMD() bool { return simd != nil || nativeSIMD }

// nativeSIMD: the native AVX2 kernels run (simd_amd64.go): the CPU has
// AVX2 and F16C, and neither WASMLLM_NOSIMD (set, at start-up) nor
// UseSIMD(false) turned them off. Always false in js builds.
var nativeSIMD bool

// UseSIMD turns the native AVX2 kernels on or off (on only where the CPU
// has them; a no-op in js builds) and reports whether they were on: the
// tests run the plain-Go loops with it. Call it while no Backend runs an
// op.
func UseSIMD(on bool) (was bool) {
	was = nativeSIMD
	nativeSIMD = on && nativeCPU()
	return was
}
