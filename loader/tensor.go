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
	// Load reads the data when Data is nil: a tensor left in its file
	// until it is needed. Each call reads anew.
	Load func() ([]byte, error)
	// Stack holds the row blocks of a Mixed tensor, each (N_i, Cols) in
	// its own type (see Stacked); nil for every other type.
	Stack []*Tensor
}

// Lazy reports whether the data is left to Load.
func (t *Tensor) Lazy() bool { return t.Data == nil && t.Load != nil }

// Size is the number of data bytes that Shape and DType call for.
func (t *Tensor) Size() (int, error) {
	if t.DType == Mixed {
		return t.stackSize()
	}
	return t.DType.Size(t.NumElements())
}

// Bytes returns the data: Data, or for a lazy tensor what Load reads,
// checked against Shape and DType.
func (t *Tensor) Bytes() ([]byte, error) {
	if t.DType == Mixed {
		return t.stackBytes()
	}
	if !t.Lazy() {
		return t.Data, nil
	}
	want, err := t.Size()
	if err != nil {
		return nil, err
	}
	b, err := t.Load()
	if err != nil {
		return nil, err
	}
	if len(b) != want {
		return nil, fmt.Errorf("%w: tensor %s %v %s needs %d bytes, loaded %d", ErrCorrupt, t.Name, t.Shape, t.DType, want, len(b))
	}
	return b, nil
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

// F32 dequantises the whole tensor to float32, loading a lazy one.
func (t *Tensor) F32() ([]float32, error) {
	if t.DType == Mixed {
		return t.stackF32()
	}
	data, err := t.Bytes()
	if err != nil {
		return nil, err
	}
	out := make([]float32, t.NumElements())
	if err := Dequantize(t.DType, data, out); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
	}
	return out, nil
}

// CheckSize verifies that len(Data) matches Shape and DType; for a lazy
// tensor, that Shape and DType give a size (Bytes checks the loaded data).
func (t *Tensor) CheckSize() error {
	if t.DType == Mixed {
		for _, p := range t.Stack {
			if err := p.CheckSize(); err != nil {
				return err
			}
		}
		return nil
	}
	want, err := t.Size()
	if err != nil || t.Lazy() {
		return err
	}
	if len(t.Data) != want {
		return fmt.Errorf("%w: tensor %s %v %s needs %d bytes, has %d", ErrCorrupt, t.Name, t.Shape, t.DType, want, len(t.Data))
	}
	return nil
}
