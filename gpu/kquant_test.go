//go:build js

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall/js"
	"testing"

	"wasmllm/cpu"
	"wasmllm/gpu/webgpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/internal/testkit/shareddata"
	"wasmllm/loader"
	"wasmllm/model"
)

// kquantTensor returns a random K-quant (N, K) tensor of type dt (ggml's
// blocks: random bits, the f16 super-block scales set so that values stay
// within about ±2) and its exact values as the loader dequantises them.
func kquantTensor(t testing.TB, r *rand.Rand, dt loader.DType, N, K int) (*loader.Tensor, []float32) {
	t.Helper()
	scales := map[loader.DType][]int{loader.Q2_K: {80, 82}, loader.Q3_K: {108}, loader.Q4_K: {0, 2}, loader.Q5_K: {0, 2}, loader.Q6_K: {208}}
	bb := dt.BlockBytes()
	data := make([]byte, N*K/256*bb)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for b := 0; b < N*K/256; b++ {
		for _, off := range scales[dt] {
			h := loader.F32ToF16((r.Float32() + 0.05) * 0.004)
			data[b*bb+off], data[b*bb+off+1] = byte(h), byte(h>>8)
		}
	}
	w := &loader.Tensor{Name: fmt.Sprintf("w_%s_%dx%d", dt, N, K), DType: dt, Shape: []int{N, K}, Data: data}
	f, err := w.F32()
	if err != nil {
		t.Fatal(err)
	}
	return w, f
}

var kquantTypes = []loader.DType{loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K}

// TestKQuantKernels checks the K-quant kernels against the Go reference on
// the exactly dequantised weights: the GEMV (T up to gemvMaxT), the GEMM
// (larger T, rows and tokens not multiples of the tile) and the embedding
// gather, for every type; the weights are uploaded as ggml's blocks.
func TestKQuantKernels(t *testing.T) {
	b := modelBackend(t)
	r := rand.New(rand.NewPCG(16, 3))
	for _, dt := range kquantTypes {
		for _, sh := range [][3]int{{1, 67, 256}, {2, 45, 512}, {3, 130, 512}, {5, 33, 768}, {1, 1000, 2048}, {70, 100, 512}, {130, 65, 256}} {
			T, N, K := sh[0], sh[1], sh[2]
			w, wf := kquantTensor(t, r, dt, N, K)
			wt, err := b.Upload(w)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt(wt).dtype; got != dt {
				t.Fatalf("%s uploaded as %s, want the blocks as they are", dt, got)
			}
			kquantMatMulCheck(t, b, r, wt, wf, dt, T, N, K)
			if T == 1 {
				ids := []int32{0, int32(N - 1), 3, int32(N / 2)}
				it, eo := b.NewI32(len(ids)), b.NewF32(len(ids), K)
				b.WriteI32(it, ids)
				b.Embed(eo, wt, it)
				eg := make([]float32, len(ids)*K)
				if err := b.ReadF32(eo, eg); err != nil {
					t.Fatal(err)
				}
				ew := make([]float32, len(ids)*K)
				cpu.Embed(ew, wf, ids, K)
				for i := range ew {
					if math.Abs(float64(eg[i]-ew[i])) > 1e-6*math.Abs(float64(ew[i])) {
						t.Errorf("Embed %s N=%d K=%d: element %d is %v, want %v", dt, N, K, i, eg[i], ew[i])
						break
					}
				}
				b.Free(it)
				b.Free(eo)
			}
			b.Free(wt)
		}
	}
}

// kquantMatMulCheck runs MatMul of T random activation rows against the
// uploaded K-quant weight wt ((N, K) of type dt, wf its exact values) and
// compares it with cpu.MatMul.
func kquantMatMulCheck(t *testing.T, b *Backend, r *rand.Rand, wt model.Tensor, wf []float32, dt loader.DType, T, N, K int) {
	t.Helper()
	xv := make([]float32, T*K)
	for i := range xv {
		xv[i] = r.Float32()*2 - 1
	}
	x, out := b.NewF32(T, K), b.NewF32(T, N)
	defer b.Free(x)
	defer b.Free(out)
	b.WriteF32(x, xv)
	b.MatMul(out, x, wt, model.MatMulFusion{})
	got := make([]float32, T*N)
	if err := b.ReadF32(out, got); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, T*N)
	cpu.MatMul(want, xv, wf, T, N, K, cpu.Fusion{})
	if e, i := golden.RowError(got, want); e > 1e-5 {
		t.Errorf("MatMul %s T=%d N=%d K=%d: error %.3g at %d: got %v want %v", dt, T, N, K, e, i, got[i], want[i])
	}
}

// TestKQuantGemvGPU runs the K-quant GEMV and experts as a GPU adapter
// gets them (a workgroup of threads striding along K by parts of a block, a
// shared-memory reduction), which the software adapters here would not
// pick: the adapter is taken as not a fallback for the test.
func TestKQuantGemvGPU(t *testing.T) {
	b := modelBackend(t)
	own := b.tune
	b.tune.cpu = false
	defer func() { b.tune = own }()
	r := rand.New(rand.NewPCG(16, 4))
	for _, dt := range kquantTypes {
		for _, sh := range [][3]int{{1, 67, 256}, {2, 20, 512}, {3, 130, 768}, {4, 9, 2048}} {
			T, N, K := sh[0], sh[1], sh[2]
			w, wf := kquantTensor(t, r, dt, N, K)
			wt, err := b.Upload(w)
			if err != nil {
				t.Fatal(err)
			}
			kquantMatMulCheck(t, b, r, wt, wf, dt, T, N, K)
			b.Free(wt)
		}
	}
	for i, dt := range kquantTypes {
		kquantMoECheck(t, b, r, dt, kquantTypes[(i+2)%len(kquantTypes)], [5]int{2, 512, 8, 768, 2}, true)
	}
}

// TestKQuantMoE checks the K-quant expert kernels against cpu.MoE on the
// dequantised experts: a decode step, a few tokens and a prefill chunk,
// token by token and in tiles, with and without renormalised top-k
// weights, gate_up and down of different types as in llama.cpp's mixes.
func TestKQuantMoE(t *testing.T) {
	b := modelBackend(t)
	defer func() { b.ops.moe.decodeMaxT = 0 }()
	r := rand.New(rand.NewPCG(16, 4))
	for i, dt := range kquantTypes {
		for _, c := range [][5]int{{1, 256, 8, 256, 2}, {5, 256, 8, 512, 2}, {40, 512, 4, 256, 3}} {
			for _, norm := range []bool{true, false} {
				kquantMoECheck(t, b, r, dt, kquantTypes[(i+1)%len(kquantTypes)], c, norm)
			}
		}
		// the tiles a GPU takes for chunks past moeDecodeMaxT (this
		// adapter's default is token by token)
		b.ops.moe.decodeMaxT = -1
		kquantMoECheck(t, b, r, dt, kquantTypes[(i+1)%len(kquantTypes)], [5]int{40, 512, 4, 256, 3}, true)
		kquantMoECheck(t, b, r, dt, kquantTypes[(i+1)%len(kquantTypes)], [5]int{5, 256, 8, 512, 2}, false)
		b.ops.moe.decodeMaxT = 0
	}
}

// TestKQuantMoESplit lowers the binding limit so that the K-quant expert
// tensors are split into parts on expert boundaries (parts after the first
// add to out).
func TestKQuantMoESplit(t *testing.T) {
	for _, dt := range []loader.DType{loader.Q3_K, loader.Q6_K} {
		D, F := 256, 256
		limit := uint64(3 * 2 * F * kquantRowBytes(dt, D)) // three experts of gate_up
		b := newTestBackend(t, webgpu.Options{MaxStorageBufferBindingSize: limit})
		r := rand.New(rand.NewPCG(16, 5))
		probe, _ := kquantTensor(t, r, dt, 8*2*F, D)
		probe.Shape = []int{8, 2 * F, D}
		pt, err := b.Upload(probe)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tt(pt).parts); n < 2 {
			t.Fatalf("%s: gate_up in %d part under a limit of %d bytes; want it split", dt, n, limit)
		}
		b.Free(pt)
		for _, T := range []int{1, 3, 33} {
			kquantMoECheck(t, b, r, dt, dt, [5]int{T, D, 8, F, 2}, true)
		}
		b.ops.moe.decodeMaxT = -1 // tiles
		kquantMoECheck(t, b, r, dt, dt, [5]int{33, D, 8, F, 2}, true)
		b.ops.moe.decodeMaxT = 0
	}
}

// kquantMoECheck runs one MoE of c = (T, D, E, F, A) with gate_up of type
// gt and down of type dn against cpu.MoE.
func kquantMoECheck(t *testing.T, b *Backend, r *rand.Rand, gt, dn loader.DType, c [5]int, norm bool) {
	t.Helper()
	T, D, E, F, A := c[0], c[1], c[2], c[3], c[4]
	rv := make([]float32, E*D)
	for i := range rv {
		rv[i] = r.Float32()*2 - 1
	}
	rw := &loader.Tensor{Name: "router", DType: loader.F32, Shape: []int{E, D}, Data: f32Bytes(rv)}
	gw, gf := kquantTensor(t, r, gt, E*2*F, D)
	gw.Shape = []int{E, 2 * F, D}
	dw, df := kquantTensor(t, r, dn, E*D, F)
	dw.Shape = []int{E, D, F}
	xv := make([]float32, T*D)
	for i := range xv {
		xv[i] = r.Float32()*2 - 1
	}
	var ts []model.Tensor
	for _, w := range []*loader.Tensor{rw, gw, dw} {
		u, err := b.Upload(w)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, u)
	}
	nv := make([]float32, D)
	for i := range nv {
		nv[i] = r.Float32()*2 - 1
	}
	nw, err := b.Upload(&loader.Tensor{Name: "norm", DType: loader.F32, Shape: []int{D}, Data: f32Bytes(nv)})
	if err != nil {
		t.Fatal(err)
	}
	ts = append(ts, nw)
	out := b.NewF32(T, D)
	b.WriteF32(out, xv)
	b.MoE(out, nw, 1e-5, ts[0], ts[1], ts[2], A, norm, model.MoEFusion{})
	got := make([]float32, T*D)
	if err := b.ReadF32(out, got); err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), xv...)
	cpu.MoE(want, nv, 1e-5, rv, gf, df, T, D, E, F, A, norm, nil, nil)
	got, want = minus(got, xv), minus(want, xv) // the experts' sum alone
	what := fmt.Sprintf("MoE %s/%s T=%d D=%d E=%d F=%d A=%d norm=%v (%d+%d parts)", gt, dn, T, D, E, F, A, norm, len(tt(ts[1]).parts), len(tt(ts[2]).parts))
	if e, i := golden.RowError(got, want); e > 1e-5 {
		t.Errorf("%s: error %.3g at %d: got %v want %v", what, e, i, got[i], want[i])
	}
	for _, u := range append(ts, out) {
		b.Free(u)
	}
}

// TestKQuantGolden runs the K-quant goldens of testdata/k on the GPU (every
// K-quant weight as ggml's blocks; llama and qwen3) against the goldens and
// the CPU backend. The K-quant MoE experts (qwen3moe) are not vendored:
// TestKQuantGoldenShared runs them from the shared data.
func TestKQuantGolden(t *testing.T) {
	kquantGoldens(t, golden.Files(t, "../testdata/k/golden", "exact", false, false))
}

// TestKQuantGoldenShared runs every exact golden of the shared K-quant data
// (15 files, Q2_K .. Q6_K of the three architectures) on the GPU
// (WASMLLM_EXTENDED=1; WASMLLM_LONG=1 adds the 4 long goldens).
func TestKQuantGoldenShared(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "testdata-k"), "golden")
	kquantGoldens(t, golden.FilesJSON(t, dir, "exact", os.Getenv("WASMLLM_LONG") == "1", false))
}

func kquantGoldens(t *testing.T, files []*golden.File) {
	modelGoldens(t, modelBackend(t), files)
}

// TestKQuantUploadJS checks that K-quant weights uploaded from JavaScript
// bytes (UploadJS, the browser loader's path: Q6_K's blocks padded on the
// way, a few MiB at a time) give the very outputs of the same weights
// uploaded from Go (Upload): for Q6_K, over more than one copy chunk.
func TestKQuantUploadJS(t *testing.T) {
	b := modelBackend(t)
	r := rand.New(rand.NewPCG(7, 11))
	for _, c := range []struct {
		dt   loader.DType
		N, K int
	}{{loader.Q6_K, 4096, 2560}, {loader.Q6_K, 33, 512}, {loader.Q4_K, 65, 768}, {loader.Q3_K, 33, 512}, {loader.Q2_K, 65, 768}} {
		w, _ := kquantTensor(t, r, c.dt, c.N, c.K)
		src := js.Global().Get("Uint8Array").New(len(w.Data))
		js.CopyBytesToJS(src, w.Data)
		fromJS, err := b.UploadJS(w.Name, w.DType, w.Shape, src)
		if err != nil {
			t.Fatal(err)
		}
		fromGo, err := b.Upload(w)
		if err != nil {
			t.Fatal(err)
		}
		xv := make([]float32, 2*c.K)
		for i := range xv {
			xv[i] = r.Float32()*2 - 1
		}
		x := b.NewF32(2, c.K)
		b.WriteF32(x, xv)
		got, want := make([]float32, 2*c.N), make([]float32, 2*c.N)
		for _, o := range []struct {
			w   model.Tensor
			dst []float32
		}{{fromJS, got}, {fromGo, want}} {
			out := b.NewF32(2, c.N)
			b.MatMul(out, x, o.w, model.MatMulFusion{})
			if err := b.ReadF32(out, o.dst); err != nil {
				t.Fatal(err)
			}
			b.Free(out)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s %dx%d: output %d is %v from UploadJS, %v from Upload", c.dt, c.N, c.K, i, got[i], want[i])
				break
			}
		}
		b.Free(x)
		b.Free(fromJS)
		b.Free(fromGo)
	}
}
