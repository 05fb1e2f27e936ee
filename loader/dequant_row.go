package loader

import "fmt"

// DequantizeRow expands row r of t, a (rows, cols) matrix of any type
// Dequantize takes, into dst (cols values), reading only that row's bytes:
// for a ggml block type the row's stretch, for the planar layouts its
// groups in the value plane and their scales in the scale plane. A row
// outside the matrix, or a dst or t.Data of the wrong size, is an error.
func DequantizeRow(t *Tensor, r int, dst []float32) error {
	if len(t.Shape) < 2 {
		return fmt.Errorf("%w: %s: a row of a %d-dimensional tensor", ErrCorrupt, t.Name, len(t.Shape))
	}
	cols := t.Shape[len(t.Shape)-1]
	rows := t.NumElements() / max(cols, 1)
	if r < 0 || r >= rows || len(dst) != cols {
		return fmt.Errorf("%w: %s: row %d of %d into %d values (rows of %d)", ErrCorrupt, t.Name, r, rows, len(dst), cols)
	}
	need, err := t.DType.Size(rows * cols)
	if err != nil {
		return err
	}
	if len(t.Data) != need {
		return fmt.Errorf("%w: %s: %d bytes, want %d", ErrCorrupt, t.Name, len(t.Data), need)
	}
	if t.DType == Q4 || t.DType == Q8 {
		if cols%32 != 0 {
			return fmt.Errorf("%w: %s: rows of %d are not whole groups of 32", ErrCorrupt, t.Name, cols)
		}
		_, qPer, scaleOff := planarSplit(t.DType, rows*cols)
		g0, ng := r*cols/32, cols/32
		for g := range ng {
			s := f16at(t.Data[scaleOff+2*(g0+g):])
			q := t.Data[(g0+g)*qPer : (g0+g+1)*qPer]
			out := dst[g*32 : g*32+32]
			if t.DType == Q8 {
				for j := range out {
					out[j] = float32(int8(q[j])) * s
				}
				continue
			}
			for j := 0; j < 16; j++ {
				out[j] = float32(int(q[j]&0xf)-8) * s
				out[j+16] = float32(int(q[j]>>4)-8) * s
			}
		}
		return nil
	}
	rb, err := t.DType.RowBytes(cols)
	if err != nil {
		return err
	}
	return Dequantize(t.DType, t.Data[r*rb:(r+1)*rb], dst)
}
