package model

import (
	"fmt"

	"wasmllm/loader"
)

// gatedQKV merges a gated attention's projections into the canonical
// attn_qkv: q (H·2Dh, K) holds each head's query rows then its gate's rows
// ([q Dh | gate Dh] per head, llama.cpp's and Hugging Face's layout), k and
// v (Hk·Dh, K). The result's rows are [q (H·Dh) | k | v | gate (H·Dh)], so
// the q, k and v heads sit where an ungated layer has them and the gate
// follows. Rows move whole: lossless for every block type; where q's type
// differs from k's or v's, the result is four row blocks in their own
// types (stackRows).
func gatedQKV(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	q, k, v := parts[0], parts[1], parts[2]
	H, Dh := c.Heads, c.HeadDim
	if q.Rows() != 2*H*Dh {
		return nil, fmt.Errorf("merging %s: %s has %d rows, want 2·%d heads·%d (query and gate per head)", name, q.Name, q.Rows(), H, Dh)
	}
	if q.DType != k.DType || q.DType != v.DType {
		qs, gate := splitGate(q, H, Dh)
		return stackRows(name, qs, k, v, gate)
	}
	cat, err := concatRows(name, q, k, v)
	if err != nil {
		return nil, err
	}
	t := &loader.Tensor{Name: name, DType: cat.DType, Shape: []int{cat.Rows(), cat.Cols()}}
	return merged(t, parts, func() ([]byte, error) {
		data, err := cat.Bytes()
		if err != nil {
			return nil, err
		}
		row := len(data) / cat.Rows()
		out := make([]byte, 0, len(data))
		head := Dh * row
		for h := range H { // the queries
			out = append(out, data[2*h*head:(2*h+1)*head]...)
		}
		out = append(out, data[2*H*head:]...) // k and v
		for h := range H {                    // the gates
			out = append(out, data[(2*h+1)*head:(2*h+2)*head]...)
		}
		return out, nil
	})
}

// splitGate splits a gated q (H·2Dh, K), [q Dh | gate Dh] per head, into
// its query rows (H·Dh, K) and its gate rows (H·Dh, K), in q's type.
func splitGate(q *loader.Tensor, H, Dh int) (qs, gate *loader.Tensor) {
	half := func(which int) *loader.Tensor {
		t := &loader.Tensor{Name: fmt.Sprintf("%s half %d", q.Name, which), DType: q.DType, Shape: []int{H * Dh, q.Cols()}}
		t, _ = merged(t, []*loader.Tensor{q}, func() ([]byte, error) {
			data, err := q.Bytes()
			if err != nil {
				return nil, err
			}
			head := Dh * (len(data) / q.Rows())
			out := make([]byte, 0, len(data)/2)
			for h := range H {
				out = append(out, data[(2*h+which)*head:(2*h+which+1)*head]...)
			}
			return out, nil
		})
		return t
	}
	return half(0), half(1)
}

// vector is a 1-D tensor read from a source tensor of any shape with as
// many elements (llama.cpp writes ffn_gate_inp_shexp as {D, 1} in F32 files
// and {D} in quantised ones).
func vector(_ *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	p := parts[0]
	t := *p
	t.Name, t.Shape = name, []int{p.NumElements()}
	return &t, nil
}
