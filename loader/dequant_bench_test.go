package loader

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDequantize reports throughput in bytes of quantised input.
func BenchmarkDequantize(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewPCG(5, 6))
	for _, d := range []DType{F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q4, Q8} {
		size, _ := d.Size(n)
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		dst := make([]float32, n)
		b.Run(d.String(), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := Dequantize(d, src, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkQuantize(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, d := range []DType{Q8_0, Q4_0} {
		b.Run(d.String(), func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				if _, err := Quantize(d, x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
