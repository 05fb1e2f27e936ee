//go:build js

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"wasmllm/loader"
	"wasmllm/model"
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
			matMulSameBits(t, b, rng, simdWeight(t, dt, N, K, wf), T)
		}
	}
}

// matMulSameBits uploads lt (N, K), multiplies T random tokens by it on the
// SIMD kernels and on the Go loops, and requires the same bits; it
// returns the uploaded weight.
func matMulSameBits(t *testing.T, b *Backend, rng *rand.Rand, lt *loader.Tensor, T int) *tensor {
	t.Helper()
	N, K := lt.Shape[0], lt.Shape[1]
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
	sameBits(t, label(fmt.Sprintf("%v T=%d N=%d K=%d", lt.DType, T, N, K)), func() []float32 {
		out := b.NewF32(T, N)
		b.MatMul(out, x, w, model.MatMulFusion{})
		v := make([]float32, T*N)
		if err := b.ReadF32(out, v); err != nil {
			t.Fatal(err)
		}
		return v
	})
	return w.(*tensor)
}

// TestSIMDKQuant: MatMul with K-quant weights (Q2_K..Q6_K), decode (one to
// three tokens) and prefill, on the SIMD dequantisation kernels gives the
// plain-Go loops' bits, and each kernel's values are loader's
// dequantisation's.
func TestSIMDKQuant(t *testing.T) {
	if simd == nil {
		t.Fatal("no SIMD kernels")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	b := New(1)
	for _, dt := range []loader.DType{loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K} {
		for _, shape := range [][3]int{{1, 37, 256}, {3, 20, 512}, {5, 40, 256}, {17, 33, 768}} {
			T, N, K := shape[0], shape[1], shape[2]
			lt := kquantWeight(rng, dt, N, K)
			w := matMulSameBits(t, b, rng, lt, T)
			// The kernel alone, against loader's dequantisation.
			want := make([]float32, N*K)
			if err := loader.Dequantize(dt, lt.Data, want); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, N*K)
			simd.batch([]kcall{{op: opDequant, w: w, row: 0, rows: N, K: K, out: got}})
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v dequantised [%d]: SIMD %v, loader %v", dt, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkSIMDMatMul: a decode GEMV and a 16-token prefill (2048 x 2048)
// on the SIMD kernels and on the plain-Go loops, side by side, for F32,
// Q8_0, Q4_0 and the Q4_K_M files' Q4_K and Q6_K.
func BenchmarkSIMDMatMul(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	be := New(1)
	const N, K = 2048, 2048
	wf := make([]float32, N*K)
	for i := range wf {
		wf[i] = float32(rng.NormFloat64())
	}
	rng2 := rand.New(rand.NewPCG(13, 14))
	for _, dt := range []loader.DType{loader.F32, loader.Q8_0, loader.Q4_0, loader.Q4_K, loader.Q6_K} {
		var lt *loader.Tensor
		if kquant(dt) {
			lt = kquantWeight(rng2, dt, N, K)
		} else {
			data, err := loader.Quantize(dt, wf)
			if err != nil {
				b.Fatal(err)
			}
			lt = &loader.Tensor{Name: "w", Shape: []int{N, K}, DType: dt, Data: data}
		}
		w, err := be.Upload(lt)
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
						be.MatMul(out, x, w, model.MatMulFusion{})
					}
					simd = saved
					b.ReportMetric(float64(2*N*K*T)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// TestSIMDAttention: the SIMD attention (scores, vexp, the weighted sum
// of V) gives the Go loop's bits, with and without a sliding window, for
// GQA and plain heads, at key counts with and without a tail of four.
func TestSIMDAttention(t *testing.T) {
	if simd == nil {
		t.Fatal("no SIMD kernels")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct{ T, H, Hk, Dh, window, start int }{{1, 8, 2, 8, 0, 40}, {5, 4, 4, 16, 0, 3}, {3, 6, 2, 64, 7, 20}, {2, 2, 1, 4, 0, 0}, {4, 4, 2, 20, 0, 9}, {2, 4, 1, 128, 0, 70}, {6, 2, 2, 36, 5, 30}} {
		C := (c.H + 2*c.Hk) * c.Dh
		capacity := c.start + c.T + 1
		qkv := make([]float32, c.T*C)
		kc := make([]float32, capacity*c.Hk*c.Dh)
		vc := make([]float32, len(kc))
		for _, s := range [][]float32{qkv, kc, vc} {
			for i := range s {
				s[i] = float32(rng.NormFloat64() * 2)
			}
		}
		pos := make([]int32, c.T)
		for i := range pos {
			pos[i] = int32(c.start + i)
		}
		run := func() []float32 {
			a := &attnTask{out: make([]float32, c.T*c.H*c.Dh), qkv: qkv, pos: pos, kc: kc, vc: vc, H: c.H, Hk: c.Hk, Dh: c.Dh, C: C, window: c.window, scores: [][]float32{make([]float32, capacity)}}
			a.run(0, 0, c.T*c.H)
			return a.out
		}
		sameBits(t, label(fmt.Sprintf("%+v", c)), run)
	}
}

// TestSIMDExp: the module's exp (vexp, four lanes and the one-lane
// tail) gives expf's bits, special values too, and its SiLU kernel gives
// siluMul's Go loop's bits at row lengths with and without a tail.
func TestSIMDExp(t *testing.T) {
	if simd == nil {
		t.Fatal("no SIMD kernels")
	}
	rng := rand.New(rand.NewPCG(19, 20))
	xs := expSpecials()
	for range 4001 {
		xs = append(xs, float32(-rng.ExpFloat64()*10), float32(rng.NormFloat64()*30))
	}
	got := slices.Clone(xs)
	simd.(*jsSIMD).exp.Invoke(ptr(got), len(got))
	runtime.KeepAlive(got)
	for i, x := range xs {
		if want := expf(x); math.Float32bits(got[i]) != math.Float32bits(want) && !(isNaN32(got[i]) && isNaN32(want)) {
			t.Fatalf("exp(%v) [%d]: SIMD module %v, expf %v", x, i, got[i], want)
		}
	}
	for _, c := range [][2]int{{1, 256}, {3, 384}, {16, 37}, {64, 8}, {2, 1024}} {
		T, F := c[0], c[1]
		gu := make([]float32, T*2*F)
		for i := range gu {
			gu[i] = float32(rng.NormFloat64() * 4)
		}
		gu[0], gu[len(gu)-1] = 100, -100
		sameBits(t, label(fmt.Sprintf("siluMul T=%d F=%d", T, F)), func() []float32 {
			out := make([]float32, T*F)
			siluMul(out, gu, T, F)
			return out
		})
	}
}

// BenchmarkSIMDAttention: 128 prompt tokens over 512 cached positions
// (32 heads on 8 KV heads of 64), on the SIMD kernel and on the Go loop.
func BenchmarkSIMDAttention(b *testing.B) {
	const T, H, Hk, Dh, start = 128, 32, 8, 64, 384
	C := (H + 2*Hk) * Dh
	rng := rand.New(rand.NewPCG(15, 16))
	qkv := make([]float32, T*C)
	kc := make([]float32, (start+T)*Hk*Dh)
	vc := make([]float32, len(kc))
	for _, s := range [][]float32{qkv, kc, vc} {
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
	}
	pos := make([]int32, T)
	for i := range pos {
		pos[i] = int32(start + i)
	}
	a := &attnTask{out: make([]float32, T*H*Dh), qkv: qkv, pos: pos, kc: kc, vc: vc, H: H, Hk: Hk, Dh: Dh, scores: [][]float32{make([]float32, start+T)}}
	for _, on := range []bool{true, false} {
		b.Run(map[bool]string{true: "simd", false: "go"}[on], func(b *testing.B) {
			saved := simd
			if !on {
				simd = nil
			}
			for range b.N {
				a.run(0, 0, T*H)
			}
			simd = saved
		})
	}
}

// TestSIMDMoE: a prompt's experts (19 tokens over 8 experts: each
// expert's tokens one matmul, decode rows under four tokens and
// dequantised tiles from four, every expert's gate_up in one batched call
// into the module and every down in another) give the Go loops' bits, for
// every weight type the kernels have.
func TestSIMDMoE(t *testing.T) {
	if simd == nil {
		t.Fatal("no SIMD kernels")
	}
	rng := rand.New(rand.NewPCG(17, 18))
	const T, D, E, F, A = 19, 64, 8, 32, 2
	random := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	b := New(1)
	for _, dt := range []loader.DType{loader.F32, loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4} {
		up := func(dt loader.DType, N, K int) model.Tensor {
			w, err := b.Upload(simdWeight(t, dt, N, K, random(N*K)))
			if err != nil {
				t.Fatal(err)
			}
			return w
		}
		router, gateUp, down := up(loader.F32, E, D), up(dt, E*2*F, D), up(dt, E*D, F)
		x := b.NewF32(T, D)
		b.WriteF32(x, random(T*D))
		sameBits(t, label(dt.String()), func() []float32 {
			out := b.NewF32(T, D)
			b.moeOut(out, x, x, router, gateUp, down, A, true, false, nil)
			v := make([]float32, T*D)
			if err := b.ReadF32(out, v); err != nil {
				t.Fatal(err)
			}
			return v
		})
	}
}

// TestSIMDDeltaNet: a Gated DeltaNet decode step (deltaTask.step) on the
// SIMD kernel gives the Go loop's bits, read-out and state, for several
// head sizes; ten steps in a row keep them equal.
func TestSIMDDeltaNet(t *testing.T) {
	if simd == nil {
		t.Fatal("no SIMD kernels")
	}
	rng := rand.New(rand.NewPCG(36, 5))
	randn := func(n int, scale float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * scale)
		}
		return x
	}
	for _, sh := range [][3]int{{2, 4, 32}, {1, 2, 128}, {2, 2, 4}, {1, 1, 64}} {
		nk, nv, S := sh[0], sh[1], sh[2]
		const T = 10
		d := &deltaTask{act: randn(T*(2*nk+nv)*S, 0.3), beta: make([]float32, T*nv), g: make([]float32, T*nv), T: T, nk: nk, nv: nv, S: S}
		for i := range d.beta {
			d.beta[i] = rng.Float32()
			d.g[i] = -rng.Float32()
		}
		M0 := randn(nv*S*S, 0.5)
		for j := range nv {
			sameBits(t, label(fmt.Sprintf("n_k %d n_v %d S %d head %d", nk, nv, S, j)), func() []float32 {
				M := slices.Clone(M0[j*S*S : (j+1)*S*S])
				var out []float32
				for tok := range T {
					o, dv := make([]float32, S), make([]float32, S)
					d.step(M, j, tok, o, dv)
					out = append(out, o...)
				}
				return append(out, M...)
			})
		}
	}
}

// BenchmarkSIMDDeltaNet times a Gated DeltaNet decode step of one value
// head of 128 (Qwen3.5's) on the SIMD kernel and on the Go loop.
func BenchmarkSIMDDeltaNet(b *testing.B) {
	const S = 128
	rng := rand.New(rand.NewPCG(1, 2))
	d := &deltaTask{act: make([]float32, 3*S), beta: []float32{0.5}, g: []float32{-0.1}, T: 1, nk: 1, nv: 1, S: S}
	for i := range d.act {
		d.act[i] = float32(rng.NormFloat64() * 0.1)
	}
	M, o, dv := make([]float32, S*S), make([]float32, S), make([]float32, S)
	for _, on := range []bool{true, false} {
		name := "go"
		if on {
			name = "simd"
		}
		b.Run(name, func(b *testing.B) {
			saved := simd
			if !on {
				simd = nil
			}
			defer func() { simd = saved }()
			for b.Loop() {
				d.step(M, 0, 0, o, dv)
			}
		})
	}
}
