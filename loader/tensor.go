package loader

import "fmt"

// Tensor is a named tensor. Shape is row-major, outermost first: a weight
// matrix of N output rows and K inputs has Shape (N, K) and K is contiguous.
// (GGUF lists dimensions innermost first; readers reverse them.)
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// NumElements is the product of Shape.
func (t *Tensor) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Rows and Cols view the tensor as a matrix: Cols is the last dimension and
// Rows the product of the others.
func (t *Tensor) Cols() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

// Rows is NumElements / Cols.
func (t *Tensor) Rows() int {
	c := t.Cols()
	if c == 0 {
		return 0
	}
	return t.NumElements() / c
}

// F32 dequantises the whole tensor to float32.
func (t *Tensor) F32() ([]float32, error) {
	out := make([]float32, t.NumElements())
	if err := Dequantize(t.DType, t.Data, out); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
	}
	return out, nil
}

// CheckSize verifies that len(Data) matches Shape and DType.
func (t *Tensor) CheckSize() error {
	want, err := t.DType.Size(t.NumElements())
	if err != nil {
		return err
	}
	if len(t.Data) != want {
		return fmt.Errorf("%w: tensor %s %v %s needs %d bytes, has %d", ErrCorrupt, t.Name, t.Shape, t.DType, want, len(t.Data))
	}
	return nil
}
