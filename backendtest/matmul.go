package backendtest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

var weightTypes = []loader.DType{loader.F32, loader.F16, loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4}

// kquantTypes are the K-quant block types, kept as ggml's blocks: rows are
// whole super-blocks of 256, so they get shapes of their own.
var kquantTypes = []loader.DType{loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K}

// fusions are the MatMul forms Forward uses: the pre-norm before q/k/v
// and lm_head, the residual add after o_proj and down, gate_up's norm and
// SiluAndMul; and the others the op allows.
var fusions = []struct{ norm, silu, add bool }{{true, false, false}, {false, false, true}, {true, true, false}, {false, true, false}, {true, false, true}}

func testMatMul(t *testing.T, b model.Backend, o Options) {
	r := rng(4)
	// The plain product: decode (T=1) and prefill shapes, awkward N and K.
	shapes := [][3]int{{1, 67, 64}, {1, 257, 128}, {5, 96, 256}, {17, 130, 96}, {64, 64, 64}, {1, 1000, 2048}, {33, 200, 512}}
	if o.Short {
		shapes = [][3]int{{1, 67, 64}, {1, 257, 128}, {5, 96, 256}, {17, 130, 96}, {1, 1000, 512}}
	}
	kshapes := [][3]int{{1, 67, 256}, {1, 257, 512}, {3, 96, 768}, {5, 130, 256}, {17, 100, 512}, {64, 64, 256}, {1, 1000, 2048}, {33, 200, 512}}
	if o.Short {
		kshapes = [][3]int{{1, 67, 256}, {3, 96, 768}, {17, 100, 512}, {1, 1000, 512}}
	}
	for _, dt := range weightTypes {
		for _, sh := range shapes {
			matMulCase(t, b, r, dt, sh, false, false, false)
		}
	}
	for _, dt := range kquantTypes {
		for _, sh := range kshapes {
			matMulCase(t, b, r, dt, sh, false, false, false)
		}
	}
	// The fused forms. T=40 takes the GEMM, with the norm and the
	// SiluAndMul as their own passes on the GPU.
	shapes = [][3]int{{1, 64, 64}, {1, 258, 128}, {3, 96, 256}, {5, 130, 96}, {40, 64, 64}, {1, 1000, 512}}
	types := weightTypes
	kshapes = [][3]int{{1, 66, 256}, {3, 96, 512}, {40, 64, 256}}
	ktypes := kquantTypes
	if o.Short {
		shapes = [][3]int{{1, 64, 64}, {1, 258, 128}, {3, 96, 256}, {40, 64, 64}}
		types = []loader.DType{loader.F32, loader.F16, loader.Q8, loader.Q4}
		kshapes = [][3]int{{1, 66, 256}, {40, 64, 256}}
		ktypes = []loader.DType{loader.Q4_K, loader.Q6_K} // Q4_K_M's
	}
	for _, f := range fusions {
		for _, dt := range types {
			for _, sh := range shapes {
				matMulCase(t, b, r, dt, sh, f.norm, f.silu, f.add)
			}
		}
		for _, dt := range ktypes {
			for _, sh := range kshapes {
				matMulCase(t, b, r, dt, sh, f.norm, f.silu, f.add)
			}
		}
	}
}

// matMulCase runs one MatMul of a random (N, K) weight of type dt on T
// random rows, over random prior contents of out, against the reference.
func matMulCase(t *testing.T, b model.Backend, r *rand.Rand, dt loader.DType, sh [3]int, norm, silu, add bool) {
	t.Helper()
	T, N, K := sh[0], sh[1], sh[2]
	w, wf := weight(r, dt, N, K)
	xv := randF32(r, T*K, 2)
	fu := model.MatMulFusion{Eps: 1e-5, SiluMul: silu, Add: add}
	ref := cpu.Fusion{Eps: 1e-5, SiluMul: silu, Add: add}
	if norm {
		ref.Norm = randF32(r, K, 1)
		fu.Norm = upload(t, b, f32Tensor("norm", ref.Norm, K))
	}
	cols := N
	if silu {
		cols = N / 2
	}
	ov := randF32(r, T*cols, 1)
	out := input(t, b, ov, T, cols)
	b.MatMul(out, input(t, b, xv, T, K), upload(t, b, w), fu)
	want := append([]float32(nil), ov...)
	cpu.MatMul(want, xv, wf, T, N, K, ref)
	compare(t, fmt.Sprintf("MatMul %s T=%d N=%d K=%d norm=%v silu=%v add=%v", dt, T, N, K, norm, silu, add),
		read(t, b, out, T*cols), want, 1e-4)
}
