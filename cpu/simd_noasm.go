//go:build !amd64

package cpu

import "wasmllm/loader"

// Without amd64's kernels (simd_amd64.s) the native-kernel entry points are
// their plain-Go loops; nativeSIMD stays false, so they are not reached.

func nativeCPU() bool { return false }

func gemvNative(w *tensor, row, rows int, x, out []float32) {
	for n := range out[:rows] {
		out[n] = w.dot(row+n, x)
	}
}

func dequantNative(w *tensor, row, rows, K int, tile []float32) {
	for i := range rows {
		w.row(row+i, tile[i*K:(i+1)*K])
	}
}

func gemmNative(w, x, out []float32, rows, K, T, ldo int) { gemmF32(w, x, out, rows, K, T, ldo) }

func nativeGemv(loader.DType) bool { return false }
