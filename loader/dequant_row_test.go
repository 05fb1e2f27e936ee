package loader

import (
	"math/rand/v2"
	"testing"
)

// TestDequantizeRow: every row of a matrix in F32, F16, Q8_0, Q4_0 and the
// planar Q4 and Q8 is the matching stretch of the whole tensor's
// dequantisation; a row past the end is an error.
func TestDequantizeRow(t *testing.T) {
	const rows, cols = 5, 64
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]float32, rows*cols)
	for i := range vals {
		vals[i] = float32(r.NormFloat64())
	}
	for _, d := range []DType{F32, F16, Q8_0, Q4_0, Q4, Q8} {
		block := map[DType]DType{Q4: Q4_0, Q8: Q8_0}[d]
		if block == 0 {
			block = d
		}
		data, err := Quantize(block, vals)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		m := &Tensor{Name: "m", DType: block, Shape: []int{rows, cols}, Data: data}
		if block != d {
			if m, err = ToPlanar(m); err != nil {
				t.Fatal(err)
			}
		}
		whole := make([]float32, rows*cols)
		if err := Dequantize(d, m.Data, whole); err != nil {
			t.Fatal(err)
		}
		row := make([]float32, cols)
		for i := range rows {
			if err := DequantizeRow(m, i, row); err != nil {
				t.Fatalf("%s row %d: %v", d, i, err)
			}
			for j, v := range row {
				if v != whole[i*cols+j] {
					t.Fatalf("%s row %d [%d]: got %v, want %v", d, i, j, v, whole[i*cols+j])
				}
			}
		}
		if err := DequantizeRow(m, rows, row); err == nil {
			t.Errorf("%s: row %d of %d read", d, rows, rows)
		}
	}
}
