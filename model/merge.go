package model

import (
	"fmt"

	"wasmllm/loader"
)

// concatRows stacks tensors with equal column counts into one (ΣN, K)
// tensor. Block-quantised rows are self-contained, so rows of one dtype
// concatenate byte for byte; mixed dtypes are widened to F32 losslessly,
// except Q4_0 with Q8_0 (llama-quantize's q4_0 files of models with 8 or
// more experts: Q4_0 attn_q, Q8_0 attn_k and attn_v), which merge as Q8_0,
// each Q4_0 block rewritten as the Q8_0 block of the same values.
func concatRows(name string, parts ...*loader.Tensor) (*loader.Tensor, error) {
	dt := parts[0].DType
	cols := parts[0].Cols()
	rows := 0
	q4q8 := true
	for _, p := range parts {
		if p.Cols() != cols {
			return nil, fmt.Errorf("merging %s: %s has %d columns, %s has %d", name, parts[0].Name, cols, p.Name, p.Cols())
		}
		if p.DType != dt {
			dt = loader.F32
		}
		q4q8 = q4q8 && (p.DType == loader.Q4_0 || p.DType == loader.Q8_0)
		rows += p.Rows()
	}
	if dt == loader.F32 && q4q8 {
		dt = loader.Q8_0
	}
	t := &loader.Tensor{Name: name, DType: dt, Shape: []int{rows, cols}}
	return merged(t, parts, func() ([]byte, error) {
		size, _ := t.Size()
		data := make([]byte, 0, size)
		for _, p := range parts {
			b, err := partBytes(p, dt)
			if err != nil {
				return nil, err
			}
			data = append(data, b...)
		}
		return data, nil
	})
}

// stackRows merges tensors with equal column counts by rows, as concatRows
// does, but keeps each part's type where they differ: adjacent parts of one
// type are concatenated, and the runs make a loader.Mixed tensor (Q4_K_M's
// Q4_K attn_q and attn_k with a Q6_K attn_v: two row blocks). So a merged
// projection costs its parts' bytes whatever their types.
func stackRows(name string, parts ...*loader.Tensor) (*loader.Tensor, error) {
	same := true
	for _, p := range parts {
		same = same && p.DType == parts[0].DType
		if len(p.Shape) != 2 || p.DType == loader.Mixed {
			return concatRows(name, parts...)
		}
	}
	if same {
		return concatRows(name, parts...)
	}
	var runs []*loader.Tensor
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j].DType == parts[i].DType {
			j++
		}
		r := parts[i]
		if j > i+1 {
			var err error
			if r, err = concatRows(fmt.Sprintf("%s rows %d-%d", name, i, j-1), parts[i:j]...); err != nil {
				return nil, err
			}
		}
		runs = append(runs, r)
		i = j
	}
	return loader.Stacked(name, runs)
}

// interleaveExperts merges per-expert matrices a (E, N1, K) and b (E, N2, K)
// into (E, N1+N2, K), expert by expert.
func interleaveExperts(name string, a, b *loader.Tensor) (*loader.Tensor, error) {
	if len(a.Shape) != 3 || len(b.Shape) != 3 || a.Shape[0] != b.Shape[0] || a.Shape[2] != b.Shape[2] {
		return nil, fmt.Errorf("merging %s: shapes %v and %v", name, a.Shape, b.Shape)
	}
	dt := a.DType
	if b.DType != dt {
		dt = loader.F32
	}
	E := a.Shape[0]
	t := &loader.Tensor{Name: name, DType: dt, Shape: []int{E, a.Shape[1] + b.Shape[1], a.Shape[2]}}
	return merged(t, []*loader.Tensor{a, b}, func() ([]byte, error) {
		ad, err := partBytes(a, dt)
		if err != nil {
			return nil, err
		}
		bd, err := partBytes(b, dt)
		if err != nil {
			return nil, err
		}
		sa, sb := len(ad)/E, len(bd)/E
		data := make([]byte, 0, len(ad)+len(bd))
		for e := 0; e < E; e++ {
			data = append(data, ad[e*sa:(e+1)*sa]...)
			data = append(data, bd[e*sb:(e+1)*sb]...)
		}
		return data, nil
	})
}

// stackExperts stacks E matrices (N, K) into one (E, N, K) tensor.
func stackExperts(name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	t, err := concatRows(name, parts...)
	if err != nil {
		return nil, err
	}
	t.Shape = []int{len(parts), parts[0].Rows(), parts[0].Cols()}
	return t, nil
}

// merged gives t the data that load assembles from parts: read now when
// every part is in memory, or left to t.Load when any part is lazy, so that
// a merge of tensors still in their files reads nothing until it is loaded.
func merged(t *loader.Tensor, parts []*loader.Tensor, load func() ([]byte, error)) (*loader.Tensor, error) {
	for _, p := range parts {
		if p.Lazy() {
			t.Load = load
			return t, nil
		}
	}
	data, err := load()
	if err != nil {
		return nil, err
	}
	t.Data = data
	return t, nil
}

// partBytes returns p's data as dt: as stored, or widened to F32.
func partBytes(p *loader.Tensor, dt loader.DType) ([]byte, error) {
	if p.DType == dt {
		return p.Bytes()
	}
	if p.DType == loader.Q4_0 && dt == loader.Q8_0 {
		b, err := p.Bytes()
		if err != nil {
			return nil, err
		}
		return q4ToQ8Blocks(b), nil
	}
	f, err := p.F32()
	if err != nil {
		return nil, err
	}
	return f32Bytes(f), nil
}

// concatBias joins the 1-D biases parts (the q, k and v biases, in the
// order concatRows stacks their weights) into one F32 vector: the bias is
// added to f32 activations, so it is widened whatever its stored type.
func concatBias(name string, parts ...*loader.Tensor) (*loader.Tensor, error) {
	n := 0
	for _, p := range parts {
		if len(p.Shape) != 1 {
			return nil, fmt.Errorf("merging %s: %s has shape %v, want a vector", name, p.Name, p.Shape)
		}
		n += p.Shape[0]
	}
	t := &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{n}}
	return merged(t, parts, func() ([]byte, error) {
		data := make([]byte, 0, 4*n)
		for _, p := range parts {
			b, err := partBytes(p, loader.F32)
			if err != nil {
				return nil, err
			}
			data = append(data, b...)
		}
		return data, nil
	})
}

// q4ToQ8Blocks rewrites ggml Q4_0 blocks (an f16 scale d, then 16 bytes
// whose low nibbles are values 0..15 and high nibbles values 16..31, each
// (nibble-8)·d) as Q8_0 blocks (d, then 32 int8 values v·d) of exactly the
// same values: same scale, v = nibble-8.
func q4ToQ8Blocks(q4 []byte) []byte {
	const in, out = 18, 34
	n := len(q4) / in
	q8 := make([]byte, n*out)
	for b := range n {
		src, dst := q4[b*in:(b+1)*in], q8[b*out:(b+1)*out]
		dst[0], dst[1] = src[0], src[1]
		for j := range 16 {
			dst[2+j] = byte(int8(src[2+j]&0x0F) - 8)
			dst[2+16+j] = byte(int8(src[2+j]>>4) - 8)
		}
	}
	return q8
}
