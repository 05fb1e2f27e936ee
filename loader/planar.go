package loader

import "fmt"

// The planar shard layouts Q4 and Q8 hold a tensor's quantised values as one
// plane (group g of 32 elements at g*16 bytes for Q4, in Q4_0's nibble order,
// or g*32 int8 for Q8), then its f16 scales as a second plane starting at the
// first 4-byte boundary after it. Groups run in row-major element order.

// planarSplit returns the group count, bytes of quantised values per group
// and the offset of the scale plane of an n-element planar tensor.
func planarSplit(d DType, n int) (groups, qPer, scaleOff int) {
	qPer = 16
	if d == Q8 {
		qPer = 32
	}
	groups = n / 32
	return groups, qPer, align4(groups * qPer)
}

func dequantPlanar(d DType, src []byte, dst []float32) {
	groups, qPer, scaleOff := planarSplit(d, len(dst))
	scales := src[scaleOff:]
	for g := 0; g < groups; g++ {
		s := f16at(scales[2*g:])
		q := src[g*qPer : g*qPer+qPer]
		out := dst[g*32 : g*32+32]
		if d == Q8 {
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
}

// planarOf maps a ggml block type to its planar layout and back.
var planarOf = map[DType]DType{Q4_0: Q4, Q8_0: Q8}

// ToPlanar repacks a Q4_0 tensor as Q4 or a Q8_0 tensor as Q8, losslessly:
// FromPlanar restores the original bytes.
func ToPlanar(t *Tensor) (*Tensor, error) {
	pd, ok := planarOf[t.DType]
	if !ok {
		return nil, fmt.Errorf("tensor %s: %w: no planar layout for %s", t.Name, ErrUnsupported, t.DType)
	}
	if err := t.CheckSize(); err != nil {
		return nil, err
	}
	n := t.NumElements()
	size, err := pd.Size(n)
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	groups, qPer, scaleOff := planarSplit(pd, n)
	bb := t.DType.BlockBytes()
	for g := 0; g < groups; g++ {
		blk := t.Data[g*bb : g*bb+bb]
		copy(out[scaleOff+2*g:], blk[:2])
		copy(out[g*qPer:], blk[2:])
	}
	return &Tensor{Name: t.Name, DType: pd, Shape: append([]int(nil), t.Shape...), Data: out}, nil
}

// FromPlanar is the inverse of ToPlanar: it turns Q4 into Q4_0 and Q8 into
// Q8_0.
func FromPlanar(t *Tensor) (*Tensor, error) {
	var bd DType
	switch t.DType {
	case Q4:
		bd = Q4_0
	case Q8:
		bd = Q8_0
	default:
		return nil, fmt.Errorf("tensor %s: %w: %s is not a planar layout", t.Name, ErrUnsupported, t.DType)
	}
	if err := t.CheckSize(); err != nil {
		return nil, err
	}
	n := t.NumElements()
	groups, qPer, scaleOff := planarSplit(t.DType, n)
	bb := bd.BlockBytes()
	out := make([]byte, groups*bb)
	for g := 0; g < groups; g++ {
		blk := out[g*bb : g*bb+bb]
		copy(blk[:2], t.Data[scaleOff+2*g:])
		copy(blk[2:], t.Data[g*qPer:g*qPer+qPer])
	}
	return &Tensor{Name: t.Name, DType: bd, Shape: append([]int(nil), t.Shape...), Data: out}, nil
}
