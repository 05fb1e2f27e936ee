package convert

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"wasmllm/loader"
)

// BenchmarkEncode measures conversion throughput (source bytes per second)
// of a 2048x2048 matrix on all CPUs, including the error measurement.
func BenchmarkEncode(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	src := make([]float32, 2048*2048)
	for i := range src {
		src[i] = float32(r.NormFloat64() * 0.02)
	}
	f32Data, _ := loader.Quantize(loader.F32, src)
	q4Data, _ := loader.Quantize(loader.Q4_0, src)
	for _, c := range []struct {
		name string
		t    *loader.Tensor
		dst  loader.DType
	}{
		{"F32-q4", &loader.Tensor{Name: "w", DType: loader.F32, Shape: []int{2048, 2048}, Data: f32Data}, loader.Q4},
		{"F32-q8", &loader.Tensor{Name: "w", DType: loader.F32, Shape: []int{2048, 2048}, Data: f32Data}, loader.Q8},
		{"F32-F16", &loader.Tensor{Name: "w", DType: loader.F32, Shape: []int{2048, 2048}, Data: f32Data}, loader.F16},
		{"Q4_0-q4", &loader.Tensor{Name: "w", DType: loader.Q4_0, Shape: []int{2048, 2048}, Data: q4Data}, loader.Q4},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.t.Data)))
			for b.Loop() {
				if _, _, err := encodeTensor(b.Context(), "x", c.t, plan{dst: c.dst}, runtime.GOMAXPROCS(0), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
