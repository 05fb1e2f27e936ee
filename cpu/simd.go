package cpu

import "wasmllm/loader"

// simdKernels are the wasm SIMD128 kernels (internal/wasmsimd), set in js
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
	has(d loader.DType) bool
}

var simd simdKernels

// simdTile is the rows of a quantised weight dequantised at a time for
// the SIMD f32 kernel in prefill.
const simdTile = 16

// matmulSIMD runs rows [lo, hi) of m on the SIMD kernels, reporting
// whether it could.
func (m *matmulTask) matmulSIMD(worker, lo, hi, K int) bool {
	w := m.w
	if simd == nil || K%32 != 0 && w.dtype != loader.F32 || K%4 != 0 {
		return false
	}
	switch {
	case w.dtype == loader.F32:
		simd.f32(w.f[(m.off+lo)*K:(m.off+hi)*K], m.x, m.out[lo:], hi-lo, K, m.T, m.N)
	case m.T < 4 && simd.has(w.dtype):
		for r := range m.T {
			simd.gemv(w, m.off+lo, hi-lo, m.x[r*K:(r+1)*K], m.out[r*m.N+lo:r*m.N+hi])
		}
	case m.T >= 4 && len(m.buf[worker]) >= simdTile*K:
		tile := m.buf[worker][:simdTile*K]
		for n := lo; n < hi; n += simdTile {
			rows := min(simdTile, hi-n)
			for i := range rows {
				w.row(m.off+n+i, tile[i*K:(i+1)*K])
			}
			simd.f32(tile[:rows*K], m.x, m.out[n:], rows, K, m.T, m.N)
		}
	default:
		return false
	}
	return true
}

// gemvRows sets out[i] = w[row+i] · x for i < len(out): one SIMD call
// where the kernels have w's type, else the Go dot per row (the same
// bits either way).
func gemvRows(w *tensor, row int, x, out []float32) {
	K := len(x)
	switch {
	case simd != nil && w.dtype == loader.F32 && K%4 == 0:
		simd.f32(w.f[row*K:(row+len(out))*K], x, out, len(out), K, 1, len(out))
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
