package cpu

import (
	"os"
	"unsafe"

	"wasmllm/loader"
)

// The native AVX2 kernels (simd_amd64.s): the quantised GEMVs of decode,
// the dequantisation of prefill's tiles, and the f32 GEMM those tiles
// (and f32 weights) go through. Each keeps its plain-Go loop's order of
// operations, so both give the same bits: gemvQ4AVX2 and gemvQ8AVX2 are
// dotQ4_0/dotQ4 and dotQ8_0/dotQ8 (tensor.go) on two rows at a time,
// gemm4x4AVX2 and gemm4x1AVX2 are gemmF32 (backend.go), dequantQ4AVX2 and
// dequantQ8AVX2 are tensor.row.

//go:noescape
func cpuid(eax, ecx uint32) (a, b, c, d uint32)

//go:noescape
func xgetbv0() uint32

//go:noescape
func gemvQ4AVX2(q, s *byte, qBlk, sBlk, dq, ds uintptr, x, out *float32, pairs, nb int)

//go:noescape
func gemvQ8AVX2(q, s *byte, qBlk, sBlk, dq, ds uintptr, x, out *float32, pairs, nb int)

//go:noescape
func dequantQ4AVX2(q, s *byte, qBlk, sBlk uintptr, dst *float32, nb int)

//go:noescape
func dequantQ8AVX2(q, s *byte, qBlk, sBlk uintptr, dst *float32, nb int)

//go:noescape
func gemm4x4AVX2(w, x, out *float32, K, ldo int)

//go:noescape
func gemm4x1AVX2(w, x, out *float32, K int)

// hasAVX2 reports whether the CPU and the OS run the kernels: AVX2, F16C
// (the f16 scales) and the ymm state saved by the OS.
func hasAVX2() bool {
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	const osxsave, avx, f16c = 1 << 27, 1 << 28, 1 << 29
	if c1&osxsave == 0 || c1&avx == 0 || c1&f16c == 0 {
		return false
	}
	if xgetbv0()&6 != 6 { // xmm and ymm state
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	return b7&(1<<5) != 0 // AVX2
}

var cpuHasAVX2 = hasAVX2()

func init() {
	nativeSIMD = cpuHasAVX2 && os.Getenv("WASMLLM_NOSIMD") == ""
}

// nativeCPU reports whether this CPU can run the native kernels.
func nativeCPU() bool { return cpuHasAVX2 }

// gemvNative is gemvRows for the types gemvQ4AVX2 and gemvQ8AVX2 read
// (nativeGemv), K a multiple of 32.
func gemvNative(w *tensor, row, rows int, x, out []float32) {
	if rows == 0 {
		return
	}
	K := len(x)
	nb := K / 32
	_, _ = x[nb*32-1], out[rows-1] // the bounds the kernels rely on
	var q, s *byte
	var qBlk, sBlk, dq, ds uintptr
	four := false
	switch w.dtype {
	case loader.Q4_0:
		base := w.q[row*nb*18 : (row+rows)*nb*18]
		q, s, qBlk, sBlk = &base[2], &base[0], 18, 18
		four = true
	case loader.Q8_0:
		base := w.q[row*nb*34 : (row+rows)*nb*34]
		q, s, qBlk, sBlk = &base[2], &base[0], 34, 34
	case loader.Q4:
		_, _ = w.q[(row+rows)*nb*16-1], w.q[w.scales+2*(row+rows)*nb-1]
		q, s, qBlk, sBlk = &w.q[row*nb*16], &w.q[w.scales+2*row*nb], 16, 2
		four = true
	case loader.Q8:
		_, _ = w.q[(row+rows)*nb*32-1], w.q[w.scales+2*(row+rows)*nb-1]
		q, s, qBlk, sBlk = &w.q[row*nb*32], &w.q[w.scales+2*row*nb], 32, 2
	default:
		panic("cpu: gemvNative on " + w.dtype.String())
	}
	dq, ds = uintptr(nb)*qBlk, uintptr(nb)*sBlk
	kernel := gemvQ8AVX2
	if four {
		kernel = gemvQ4AVX2
	}
	pairs := rows / 2
	if pairs > 0 {
		kernel(q, s, qBlk, sBlk, dq, ds, &x[0], &out[0], pairs, nb)
	}
	if rows%2 == 1 {
		// The last row alone: its pair is itself, one value kept.
		var two [2]float32
		r := uintptr(rows - 1)
		kernel((*byte)(unsafe.Add(unsafe.Pointer(q), r*dq)), (*byte)(unsafe.Add(unsafe.Pointer(s), r*ds)), qBlk, sBlk, 0, 0, &x[0], &two[0], 1, nb)
		out[rows-1] = two[0]
	}
}

// nativeGemv reports whether gemvNative reads d.
func nativeGemv(d loader.DType) bool {
	switch d {
	case loader.Q4_0, loader.Q8_0, loader.Q4, loader.Q8:
		return true
	}
	return false
}

// dequantNative sets tile (rows, K) to rows [row, row+rows) of w, as
// w.row does, for the types nativeGemv reads; K a multiple of 32.
func dequantNative(w *tensor, row, rows, K int, tile []float32) {
	if rows == 0 {
		return
	}
	nb := K / 32
	n := rows * nb
	_ = tile[n*32-1]
	switch w.dtype {
	case loader.Q4_0:
		b := w.q[row*nb*18 : (row*nb+n)*18]
		dequantQ4AVX2(&b[2], &b[0], 18, 18, &tile[0], n)
	case loader.Q8_0:
		b := w.q[row*nb*34 : (row*nb+n)*34]
		dequantQ8AVX2(&b[2], &b[0], 34, 34, &tile[0], n)
	case loader.Q4:
		_ = w.q[(row*nb+n)*16-1]
		_ = w.q[w.scales+2*(row*nb+n)-1]
		dequantQ4AVX2(&w.q[row*nb*16], &w.q[w.scales+2*row*nb], 16, 2, &tile[0], n)
	case loader.Q8:
		_ = w.q[(row*nb+n)*32-1]
		_ = w.q[w.scales+2*(row*nb+n)-1]
		dequantQ8AVX2(&w.q[row*nb*32], &w.q[w.scales+2*row*nb], 32, 2, &tile[0], n)
	default:
		panic("cpu: dequantNative on " + w.dtype.String())
	}
}

// gemmNative is gemmF32 on the AVX2 kernels, four rows at a time (the last
// rows%4 by dotF32), K a multiple of 4: every output computed as gemmF32
// computes it, in another order of outputs.
func gemmNative(w, x, out []float32, rows, K, T, ldo int) {
	if rows == 0 || T == 0 {
		return
	}
	r4 := rows &^ 3
	_ = w[rows*K-1]
	_ = x[T*K-1]
	_ = out[(T-1)*ldo+rows-1]
	// Rows in chunks of about 128 KiB, each against every token, so that a
	// large f32 weight streams from memory once, not once per four tokens.
	chunk := max(4, (32<<10)/K&^3)
	for r0 := 0; r0 < r4; r0 += chunk {
		r1 := min(r0+chunk, r4)
		t := 0
		for ; t+4 <= T; t += 4 {
			for r := r0; r < r1; r += 4 {
				gemm4x4AVX2(&w[r*K], &x[t*K], &out[t*ldo+r], K, ldo)
			}
		}
		for ; t < T; t++ {
			for r := r0; r < r1; r += 4 {
				gemm4x1AVX2(&w[r*K], &x[t*K], &out[t*ldo+r], K)
			}
		}
	}
	for t := range T {
		xt := x[t*K : (t+1)*K]
		for r := r4; r < rows; r++ {
			out[t*ldo+r] = dotF32(w[r*K:(r+1)*K], xt)
		}
	}
}
