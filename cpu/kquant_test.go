package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"wasmllm/loader"
)

// TestDotKQuant checks each K-quant dot product against DotKQuant, the
// dequantise-then-loop definition, on random blocks (every bit pattern of
// the quants and sub-block scales occurs).
func TestDotKQuant(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	scales := map[loader.DType][]int{loader.Q2_K: {80, 82}, loader.Q3_K: {108}, loader.Q4_K: {0, 2}, loader.Q5_K: {0, 2}, loader.Q6_K: {208}}
	dots := map[loader.DType]func([]byte, []float32) float32{
		loader.Q2_K: dotQ2K, loader.Q3_K: dotQ3K, loader.Q4_K: dotQ4K, loader.Q5_K: dotQ5K, loader.Q6_K: dotQ6K,
	}
	for _, dt := range []loader.DType{loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K} {
		for _, K := range []int{256, 512, 4096} {
			bb := dt.BlockBytes()
			row := make([]byte, K/256*bb)
			for i := range row {
				row[i] = byte(r.Uint32())
			}
			for b := 0; b < K/256; b++ {
				for _, off := range scales[dt] {
					h := loader.F32ToF16((r.Float32() + 0.05) * 0.004)
					row[b*bb+off], row[b*bb+off+1] = byte(h), byte(h>>8)
				}
			}
			x := make([]float32, K)
			var xabs float64
			for i := range x {
				x[i] = r.Float32()*2 - 1
				xabs += math.Abs(float64(x[i]))
			}
			got, want := dots[dt](row, x), DotKQuant(dt, row, x)
			// both round in f32: allow a few ulps of the sum of |w·x|
			if d := math.Abs(float64(got - want)); d > 1e-5*xabs {
				t.Errorf("%s K=%d: got %v want %v", dt, K, got, want)
			}
			t.Log(fmt.Sprintf("%s K=%d: %v vs %v", dt, K, got, want))
		}
	}
}
