package loader

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Mixed is the type of a matrix stored as row blocks of different types
// (Tensor.Stack): a merged projection whose parts llama-quantize gave
// different block types (Q4_K_M's attn_q and attn_k Q4_K with a Q6_K
// attn_v). It has no block size of its own; its size is its parts'.
const Mixed DType = 1002

// Stacked returns a Mixed tensor (ΣN, K) of the row blocks parts, each
// (N_i, K) in its own type, in order; adjacent parts of one type are kept
// as given (the caller merges them first if it wants fewer). Parts keep
// their own data or Load.
func Stacked(name string, parts []*Tensor) (*Tensor, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: stacking %s: no parts", ErrCorrupt, name)
	}
	cols, rows := parts[0].Cols(), 0
	for _, p := range parts {
		if len(p.Shape) != 2 || p.Cols() != cols || p.DType == Mixed {
			return nil, fmt.Errorf("%w: stacking %s: part %s %v %s is not a (N, %d) matrix of one type", ErrCorrupt, name, p.Name, p.Shape, p.DType, cols)
		}
		rows += p.Rows()
	}
	return &Tensor{Name: name, DType: Mixed, Shape: []int{rows, cols}, Stack: parts}, nil
}

// stackSize is the sum of t.Stack's sizes.
func (t *Tensor) stackSize() (int, error) {
	n := 0
	for _, p := range t.Stack {
		s, err := p.Size()
		if err != nil {
			return 0, err
		}
		n += s
	}
	return n, nil
}

// stackBytes is t.Stack's bytes end to end.
func (t *Tensor) stackBytes() ([]byte, error) {
	var out []byte
	for _, p := range t.Stack {
		b, err := p.Bytes()
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// stackF32 is t.Stack dequantised, end to end.
func (t *Tensor) stackF32() ([]float32, error) {
	out := make([]float32, 0, t.NumElements())
	for _, p := range t.Stack {
		f, err := p.F32()
		if err != nil {
			return nil, err
		}
		out = append(out, f...)
	}
	return out, nil
}

// Widened returns t as one F32 tensor: t itself unless it is Mixed.
func (t *Tensor) Widened() (*Tensor, error) {
	if t.DType != Mixed {
		return t, nil
	}
	f, err := t.F32()
	if err != nil {
		return nil, err
	}
	return &Tensor{Name: t.Name, DType: F32, Shape: append([]int(nil), t.Shape...), Data: F32Bytes(f)}, nil
}

// F32Bytes is f as little-endian float32 bytes.
func F32Bytes(f []float32) []byte {
	b := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}
