//go:build js

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"wasmllm/loader"
)

// TestSIMDInBrowser: the page handed its memory over, the SIMD module
// loaded, and MatMul on it (decode rows, F32 weights, prefill tiles, and
// row ranges that start mid-matrix) gives the plain-Go loops' bits for
// every type it covers.
func TestSIMDInBrowser(t *testing.T) {
	if simd == nil {
		t.Fatal("no SIMD kernels: wasmllmGoMemory unset or SIMD128 missing")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	b := New(1)
	for _, dt := range []loader.DType{loader.F32, loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4} {
		for _, shape := range [][3]int{{1, 37, 64}, {3, 20, 96}, {5, 40, 128}, {17, 33, 32}} {
			T, N, K := shape[0], shape[1], shape[2]
			wf := make([]float32, N*K)
			for i := range wf {
				wf[i] = float32(rng.NormFloat64())
			}
			block, planar := map[loader.DType]loader.DType{loader.Q8: loader.Q8_0, loader.Q4: loader.Q4_0}[dt]
			if !planar {
				block = dt
			}
			data, err := loader.Quantize(block, wf)
			if err != nil {
				t.Fatal(err)
			}
			lt := &loader.Tensor{Name: "w", Shape: []int{N, K}, DType: block, Data: data}
			if planar {
				if lt, err = loader.ToPlanar(lt); err != nil {
					t.Fatal(err)
				}
			}
			w, err := b.Upload(lt)
			if err != nil {
				t.Fatal(err)
			}
			x := b.NewF32(T, K)
			xs := make([]float32, T*K)
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
			b.WriteF32(x, xs)
			run := func() []float32 {
				out := b.NewF32(T, N)
				b.MatMul(out, x, w)
				v := make([]float32, T*N)
				if err := b.ReadF32(out, v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			got := run()
			saved := simd
			simd = nil
			want := run()
			simd = saved
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v T=%d N=%d K=%d [%d]: SIMD %v, Go %v", dt, T, N, K, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkSIMDMatMul: a decode GEMV (2048 x 2048) on the SIMD kernels
// and on the plain-Go loops, side by side.
func BenchmarkSIMDMatMul(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	be := New(1)
	const N, K = 2048, 2048
	wf := make([]float32, N*K)
	for i := range wf {
		wf[i] = float32(rng.NormFloat64())
	}
	for _, dt := range []loader.DType{loader.F32, loader.Q8_0, loader.Q4_0} {
		data, err := loader.Quantize(dt, wf)
		if err != nil {
			b.Fatal(err)
		}
		w, err := be.Upload(&loader.Tensor{Name: "w", Shape: []int{N, K}, DType: dt, Data: data})
		if err != nil {
			b.Fatal(err)
		}
		for _, T := range []int{1, 16} {
			x, out := be.NewF32(T, K), be.NewF32(T, N)
			for _, on := range []bool{true, false} {
				name := fmt.Sprintf("%v/T=%d/go", dt, T)
				if on {
					name = fmt.Sprintf("%v/T=%d/simd", dt, T)
				}
				b.Run(name, func(b *testing.B) {
					saved := simd
					if !on {
						simd = nil
					}
					for range b.N {
						be.MatMul(out, x, w)
					}
					simd = saved
					b.ReportMetric(float64(2*N*K*T)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
