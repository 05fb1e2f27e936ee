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
// follows. Rows move whole: lossless for every block type (mixed types
// are widened to F32, as concatRows does).
func gatedQKV(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	q, k, v := parts[0], parts[1], parts[2]
	H, Dh := c.Heads, c.HeadDim
	if q.Rows() != 2*H*Dh {
		return nil, fmt.Errorf("merging %s: %s has %d rows, want 2·%d heads·%d (query and gate per head)", name, q.Name, q.Rows(), H, Dh)
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

// vector is a 1-D tensor read from a source tensor of any shape with as
// many elements (llama.cpp writes ffn_gate_inp_shexp as {D, 1} in F32 files
// and {D} in quantised ones).
func vector(_ *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	p := parts[0]
	t := *p
	t.Name, t.Shape = name, []int{p.NumElements()}
	return &t, nil
}
