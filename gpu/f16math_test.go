//go:build js

package gpu

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall/js"
	"testing"

	"wasmllm/internal/testkit"
	"wasmllm/loader"
	"wasmllm/model"
)

// TestF16Math: with PrefillMath MathF16, on an adapter with shader-f16
// (Firefox here; Chromium's SwiftShader has none and skips), the prefill
// GEMM tile multiplies in f16: every weight dtype, K-quants included,
// matches the f64 reference within 2e-3 of the largest output at awkward
// shapes (K not a multiple of the f16 tile's 64), and every exact golden
// holds at the f16 tolerance, greedy ids equal. MathAuto keeps f32 on a
// software adapter, where f16 is emulated and slower.
func TestF16Math(t *testing.T) {
	d := device(t)
	if !d.Features.ShaderF16 {
		// Chromium's SwiftShader has no shader-f16; Firefox's adapter
		// (llvmpipe) does, and without it the test would run nowhere.
		ua := js.Global().Get("navigator").Get("userAgent").String()
		testkit.Need(t, !strings.Contains(ua, "Firefox"), "no shader-f16 in Firefox (%s): TestF16Math runs in no browser", ua)
		t.Skip("no shader-f16 on this adapter (Chromium's SwiftShader has none): Firefox runs this test")
	}
	auto, err := NewBackend(d, sharedPipelines(d, BackendOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if auto.F16Math() != !d.AdapterInfo.Fallback {
		t.Errorf("MathAuto: f16 math %v on an adapter with fallback %v", auto.F16Math(), d.AdapterInfo.Fallback)
	}
	b, err := NewBackend(d, sharedPipelines(d, BackendOptions{PrefillMath: MathF16}))
	if err != nil {
		t.Fatal(err)
	}
	if !b.F16Math() {
		t.Fatal("MathF16 on shader-f16: f32 math")
	}
	types := append(append([]loader.DType(nil), matmulTypes...), loader.Q4_K, loader.Q6_K)
	for _, sh := range [][3]int{{9, 70, 32}, {33, 67, 96}, {64, 100, 256}, {70, 130, 2048}} {
		T, N, K := sh[0], sh[1], sh[2]
		r := rand.New(rand.NewPCG(uint64(T*1000003+N*1009+K), 11))
		x, xv := randomInput(b, r, T, K)
		for _, dt := range types {
			if kquantWeight(dt) && K%256 != 0 {
				continue
			}
			lw, wf := matmulWeight(t, r, dt, N, K)
			w, err := b.Upload(lw)
			if err != nil {
				t.Fatalf("upload %s: %v", lw.Name, err)
			}
			o := b.NewF32(T, N)
			b.MatMul(o, x, w, model.MatMulFusion{})
			got := make([]float32, T*N)
			what := fmt.Sprintf("f16 gemm %s T=%d N=%d K=%d", dt, T, N, K)
			if err := b.ReadF32(o, got); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			checkMatMul(t, what, got, matmulRef(xv, wf, T, N, K), N, 2e-3)
			b.Free(o)
			b.Free(w)
		}
		b.Free(x)
	}
	modelGoldens(t, b, exactGoldens(t))
}
