//go:build js

package gpu

import (
	"math/rand/v2"
	"syscall/js"
	"testing"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// TestUploadJS: a weight written from JavaScript bytes computes the same
// MatMul, bit for bit, as one uploaded from Go, split by rows or whole, for
// every dtype UploadJS takes; other dtypes and sizes are refused.
func TestUploadJS(t *testing.T) {
	for _, split := range []bool{false, true} {
		opts := webgpu.Options{}
		if split {
			opts.MaxStorageBufferBindingSize = 4096 // several parts per weight
		}
		b := newTestBackend(t, opts)
		r := rand.New(rand.NewPCG(1, 2))
		for _, dt := range []loader.DType{loader.F32, loader.F16, loader.Q8, loader.Q4, loader.Q3_K, loader.Q6_K} {
			T, N, K := 3, 200, 64
			var w *loader.Tensor
			if kquantWeight(dt) { // ggml's blocks, 2-byte aligned rows
				K = 256
				w, _ = kquantTensor(t, r, dt, N, K)
			} else {
				w, _ = matmulWeight(t, r, dt, N, K)
			}
			// The bytes sit at an odd offset of a larger JS array, as a
			// tensor inside a shard does.
			shard := js.Global().Get("Uint8Array").New(len(w.Data) + 7)
			js.CopyBytesToJS(shard.Call("subarray", 7), w.Data)
			fromJS, err := b.UploadJS(w.Name, w.DType, w.Shape, shard.Call("subarray", 7))
			if err != nil {
				t.Fatalf("%s: %v", dt, err)
			}
			fromGo, err := b.Upload(w)
			if err != nil {
				t.Fatal(err)
			}
			if a, c := len(tt(fromJS).parts), len(tt(fromGo).parts); a != c || split != (a > 1) {
				t.Errorf("%s split %v: %d parts from JS, %d from Go", dt, split, a, c)
			}
			x := make([]float32, T*K)
			for i := range x {
				x[i] = r.Float32()*2 - 1
			}
			xt := b.NewF32(T, K)
			b.WriteF32(xt, x)
			got, want := make([]float32, T*N), make([]float32, T*N)
			for _, c := range []struct {
				w   model.Tensor
				dst []float32
			}{{fromJS, got}, {fromGo, want}} {
				out := b.NewF32(T, N)
				b.MatMul(out, xt, c.w, model.MatMulFusion{})
				if err := b.ReadF32(out, c.dst); err != nil {
					t.Fatal(err)
				}
				b.Free(out)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s split %v: out[%d] = %v from JS, %v from Go", dt, split, i, got[i], want[i])
				}
			}
			b.Free(xt)
			b.Free(fromJS)
			b.Free(fromGo)
		}
		if _, err := b.UploadJS("q8_0", loader.Q8_0, []int{1, 32}, js.Global().Get("Uint8Array").New(34)); err == nil {
			t.Error("UploadJS took a Q8_0 tensor")
		}
		if _, err := b.UploadJS("short", loader.F32, []int{2, 4}, js.Global().Get("Uint8Array").New(31)); err == nil {
			t.Error("UploadJS took 31 bytes for 8 F32 values")
		}
	}
}
