package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"wasmllm/internal/testkit"
	"wasmllm/loader"
)

// needAVX2 is the check before a test of the native kernels.
func needAVX2(t *testing.T) {
	t.Helper()
	testkit.Need(t, nativeCPU(), "the CPU has no AVX2 and F16C: the native kernels do not run here")
}

// plainGo runs f with the native kernels off.
func plainGo(f func()) {
	was := UseSIMD(false)
	defer UseSIMD(was)
	f()
}

// sameBitsNative fails on the first value of got and want whose bits
// differ, printing the index and both values.
func sameBitsNative(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s [%d]: AVX2 %v (%#08x), Go %v (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// nativeWeight is a random (rows, K) weight of type dt (F32, Q8_0, Q4_0,
// Q8, Q4), with a subnormal f16 scale or two.
func nativeWeight(t *testing.T, rng *rand.Rand, dt loader.DType, rows, K int) *tensor {
	t.Helper()
	wf := make([]float32, rows*K)
	for i := range wf {
		wf[i] = float32(rng.NormFloat64())
	}
	for i := 0; i < len(wf); i += 97 * 32 {
		for j := i; j < min(i+32, len(wf)); j++ {
			wf[j] *= 1e-7 // the block's scale is a subnormal f16
		}
	}
	lt := &loader.Tensor{Name: "w", Shape: []int{rows, K}, DType: loader.F32, Data: f32Bytes(wf)}
	if dt != loader.F32 {
		lt = simdWeight(t, dt, rows, K, wf)
	}
	w, err := upload(lt)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func randVec(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	if n > 5 {
		x[5] = 0 // a zero input: 0·q gives ±0, whose sign the order keeps
	}
	return x
}

// TestNativeGemv checks gemvQ4AVX2 and gemvQ8AVX2 (through gemvRows)
// against dotQ4_0, dotQ4, dotQ8_0 and dotQ8 bit for bit, at odd and even
// row counts and offsets.
func TestNativeGemv(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []loader.DType{loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4} {
		for _, K := range []int{32, 96, 2048} {
			const N = 19
			w := nativeWeight(t, rng, dt, N, K)
			x := randVec(rng, K)
			for _, span := range [][2]int{{0, 1}, {0, 2}, {3, 8}, {0, N}, {2, N}} {
				row, rows := span[0], span[1]-span[0]
				got := make([]float32, rows)
				gemvRows(w, row, x, got)
				want := make([]float32, rows)
				for i := range want {
					want[i] = w.dot(row+i, x)
				}
				sameBitsNative(t, fmt.Sprintf("gemv %v K=%d rows [%d,%d)", dt, K, span[0], span[1]), got, want)
			}
		}
	}
}

// TestNativeDequant checks dequantQ4AVX2 and dequantQ8AVX2 (through
// dequantRows) against tensor.row bit for bit.
func TestNativeDequant(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []loader.DType{loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4} {
		for _, K := range []int{32, 160} {
			const N = 37
			w := nativeWeight(t, rng, dt, N, K)
			for _, span := range [][2]int{{0, 1}, {5, 21}, {21, N}} {
				row, rows := span[0], span[1]-span[0]
				got := make([]float32, rows*K)
				dequantRows(w, row, rows, K, got)
				want := make([]float32, rows*K)
				for i := range rows {
					w.row(row+i, want[i*K:(i+1)*K])
				}
				sameBitsNative(t, fmt.Sprintf("dequant %v K=%d rows [%d,%d)", dt, K, span[0], span[1]), got, want)
			}
		}
	}
}

// TestNativeGemm checks gemm4x4AVX2 and gemm4x1AVX2 (through gemm)
// against gemmF32 bit for bit: token counts around the four a kernel
// takes, row counts around its four, and an output wider than the rows.
func TestNativeGemm(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, K := range []int{4, 12, 96, 2048} {
		for _, rows := range []int{1, 4, 7, 16, 43} { // 43 rows of K=2048: chunks of 16, 16 and 8, and 3 by dotF32
			for _, T := range []int{1, 3, 4, 5, 9} {
				ldo := rows + 3
				w, x := randVec(rng, rows*K), randVec(rng, T*K)
				got, want := randVec(rng, T*ldo), make([]float32, T*ldo)
				copy(want, got)
				gemm(w, x, got, rows, K, T, ldo)
				gemmF32(w, x, want, rows, K, T, ldo)
				sameBitsNative(t, fmt.Sprintf("gemm K=%d rows=%d T=%d", K, rows, T), got, want)
			}
		}
	}
}

// TestNativeMatMul runs whole matmuls (decode rows, prefill tiles, the
// pool's split) with the kernels on and off: the same bits.
func TestNativeMatMul(t *testing.T) {
	needAVX2(t)
	rng := rand.New(rand.NewPCG(7, 8))
	b := New(2)
	for _, dt := range []loader.DType{loader.F32, loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4} {
		const N, K = 150, 512
		w := nativeWeight(t, rng, dt, N, K)
		for _, T := range []int{1, 2, 7, 40} {
			x := randVec(rng, T*K)
			got, want := make([]float32, T*N), make([]float32, T*N)
			b.matmul(got, x, w, T, N, K)
			plainGo(func() { b.matmul(want, x, w, T, N, K) })
			sameBitsNative(t, fmt.Sprintf("matmul %v T=%d", dt, T), got, want)
		}
	}
}

// TestUseSIMD checks the switch: off, SIMD reports false and the matmuls
// take the Go loops; WASMLLM_NOSIMD=1 turns the kernels off at start-up.
func TestUseSIMD(t *testing.T) {
	needAVX2(t)
	if os.Getenv("WASMLLM_NOSIMD_CHILD") != "" {
		if SIMD() {
			t.Fatal("WASMLLM_NOSIMD=1, and SIMD() is true")
		}
		return
	}
	if !SIMD() {
		t.Fatal("an AVX2 CPU, and SIMD() is false")
	}
	plainGo(func() {
		if SIMD() {
			t.Error("UseSIMD(false), and SIMD() is true")
		}
	})
	if !SIMD() {
		t.Error("UseSIMD(true) did not turn the kernels back on")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUseSIMD$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WASMLLM_NOSIMD=1", "WASMLLM_NOSIMD_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the child with WASMLLM_NOSIMD=1: %v\n%s", err, out)
	}
}

// BenchmarkNativeMatMul times one matmul at Llama-3.2-1B's shapes (ffn
// up: 8192 x 2048) on one goroutine, with the kernels (avx2) and without
// (go): decode (T=1) in GB/s of weights, prefill (T=64) in GFLOP/s, both
// per second of the thread's CPU time.
func BenchmarkNativeMatMul(b *testing.B) {
	t := &testing.T{}
	rng := rand.New(rand.NewPCG(9, 10))
	const N, K = 8192, 2048
	for _, dt := range []loader.DType{loader.Q4_0, loader.Q8_0, loader.F32} {
		w := nativeWeight(t, rng, dt, N, K)
		bytes := float64(len(w.q) + 4*len(w.f))
		for _, T := range []int{1, 64} {
			x := randVec(rng, T*K)
			out := make([]float32, T*N)
			bk := New(1)
			for _, mode := range []string{"avx2", "go"} {
				b.Run(fmt.Sprintf("%v/T=%d/%s", dt, T, mode), func(b *testing.B) {
					was := UseSIMD(mode == "avx2")
					defer UseSIMD(was)
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					c0 := threadCPU()
					for range b.N {
						bk.matmul(out, x, w, T, N, K)
					}
					// This thread's CPU time, not the wall clock: the
					// machine may be shared.
					s := (threadCPU() - c0).Seconds() / float64(b.N)
					b.ReportMetric(s*1e3, "cpu-ms/op")
					if T == 1 {
						b.ReportMetric(bytes/s/1e9, "GB/s")
					} else {
						b.ReportMetric(2*float64(N*K*T)/s/1e9, "GFLOP/s")
					}
				})
			}
		}
	}
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
