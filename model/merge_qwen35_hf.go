package model

import (
	"encoding/binary"
	"fmt"
	"math"

	"wasmllm/loader"
)

// Qwen3.5's Hugging Face tensors become llama.cpp's with the converter's
// transforms (conversion/qwen.py: Qwen3NextModel.modify_tensors,
// _LinearAttentionVReorderBase): every RMSNorm weight but linear_attn.norm
// is stored as 1 + w (Hugging Face's norms are zero-centred), A_log becomes
// -exp(A_log), the conv weight is squeezed to (ConvDim, K), and the value
// heads move from Hugging Face's grouped order (the n_v/n_k value heads of
// key head 0 first) to the tiled order the GGUF and the DeltaNet op use
// (value head j reads key head j mod n_k). The functions here are those
// transforms, each a tensorRow merge.

// tiledHead is the grouped-order index of tiled value head j: the
// converter's _reorder_v_heads views the heads as (n_k, r) and swaps the
// axes, so tiled head j = v·n_k + k holds grouped head k·r + v.
func tiledHead(j, nk, r int) int { return (j%nk)*r + j/nk }

// reorderVRows moves the value heads of data's rows (rowBytes each) from
// grouped to tiled order: nv heads of hd rows, starting at row first.
func reorderVRows(data []byte, rowBytes, first, nk, nv, hd int) []byte {
	out := make([]byte, len(data))
	copy(out, data[:first*rowBytes])
	head := hd * rowBytes
	base := first * rowBytes
	for j := range nv {
		src := base + tiledHead(j, nk, nv/nk)*head
		copy(out[base+j*head:], data[src:src+head])
	}
	copy(out[base+nv*head:], data[base+nv*head:])
	return out
}

// vHeads checks that t has rows (its first dimension) with the value
// heads where the config says, and returns its bytes and row size.
func vHeads(name string, t *loader.Tensor, rows int) ([]byte, int, error) {
	if len(t.Shape) == 0 || t.Shape[0] != rows {
		return nil, 0, fmt.Errorf("merging %s: %s has shape %v, want %d rows", name, t.Name, t.Shape, rows)
	}
	data, err := t.Bytes()
	if err != nil {
		return nil, 0, err
	}
	return data, len(data) / rows, nil
}

// hfSSMIn merges in_proj_qkv, in_proj_z, in_proj_b and in_proj_a into
// ssm_in ([q k v | z | beta | alpha] rows), each value-head block tiled.
func hfSSMIn(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	sp := c.deltaNetSpec()
	nk, nv, S := sp.KeyHeads, sp.ValueHeads, sp.HeadDim
	rows := []int{sp.ConvDim(), nv * S, nv, nv}
	first := []int{2 * nk * S, 0, 0, 0}
	hd := []int{S, S, 1, 1}
	tiled := make([]*loader.Tensor, len(parts))
	for i, p := range parts {
		t := *p
		if len(p.Shape) != 2 || p.Shape[0] != rows[i] {
			return nil, fmt.Errorf("merging %s: %s has shape %v, want %d rows", name, p.Name, p.Shape, rows[i])
		}
		load := func() ([]byte, error) {
			data, rb, err := vHeads(name, p, rows[i])
			if err != nil {
				return nil, err
			}
			return reorderVRows(data, rb, first[i], nk, nv, hd[i]), nil
		}
		t.Data, t.Load = nil, nil
		tt, err := merged(&t, []*loader.Tensor{p}, load)
		if err != nil {
			return nil, err
		}
		tiled[i] = tt
	}
	return concatRows(name, tiled...)
}

// hfConv is the conv1d weight (ConvDim, 1, K) squeezed to (ConvDim, K),
// its value channels tiled.
func hfConv(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	sp := c.deltaNetSpec()
	p := parts[0]
	if n := p.NumElements(); p.Shape[0] != sp.ConvDim() || n != sp.ConvDim()*sp.ConvKernel {
		return nil, fmt.Errorf("merging %s: %s has shape %v, want (%d, 1, %d)", name, p.Name, p.Shape, sp.ConvDim(), sp.ConvKernel)
	}
	t := &loader.Tensor{Name: name, DType: p.DType, Shape: []int{sp.ConvDim(), sp.ConvKernel}}
	return merged(t, parts, func() ([]byte, error) {
		data, rb, err := vHeads(name, p, sp.ConvDim())
		if err != nil {
			return nil, err
		}
		return reorderVRows(data, rb, 2*sp.KeyHeads*sp.HeadDim, sp.KeyHeads, sp.ValueHeads, sp.HeadDim), nil
	})
}

// perHeadF32 is a (n_v) vector in F32, its heads tiled, each value mapped
// by f (nil: as it is).
func perHeadF32(f func(float64) float64) func(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	return func(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
		sp := c.deltaNetSpec()
		p := parts[0]
		if p.NumElements() != sp.ValueHeads {
			return nil, fmt.Errorf("merging %s: %s has shape %v, want (%d)", name, p.Name, p.Shape, sp.ValueHeads)
		}
		t := &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{sp.ValueHeads}}
		return merged(t, parts, func() ([]byte, error) {
			v, err := p.F32()
			if err != nil {
				return nil, err
			}
			out := make([]float32, len(v))
			for j := range out {
				x := v[tiledHead(j, sp.KeyHeads, sp.ValueHeads/sp.KeyHeads)]
				if f != nil {
					x = float32(f(float64(x)))
				}
				out[j] = x
			}
			return f32Bytes(out), nil
		})
	}
}

// hfALog is ssm_a = -exp(A_log), per value head, tiled.
var hfALog = perHeadF32(func(x float64) float64 { return -math.Exp(x) })

// hfDtBias is ssm_dt.bias, per value head, tiled.
var hfDtBias = perHeadF32(nil)

// hfOutProj is out_proj (D, n_v·S) with its columns' value heads tiled
// (F32, F16 and BF16: Hugging Face's types).
func hfOutProj(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	sp := c.deltaNetSpec()
	p := parts[0]
	size := map[loader.DType]int{loader.F32: 4, loader.F16: 2, loader.BF16: 2}[p.DType]
	if size == 0 {
		return nil, fmt.Errorf("merging %s: %s is %v, want F32, F16 or BF16", name, p.Name, p.DType)
	}
	if len(p.Shape) != 2 || p.Shape[1] != sp.Inner() {
		return nil, fmt.Errorf("merging %s: %s has shape %v, want (D, %d)", name, p.Name, p.Shape, sp.Inner())
	}
	t := &loader.Tensor{Name: name, DType: p.DType, Shape: []int{p.Shape[0], p.Shape[1]}}
	return merged(t, parts, func() ([]byte, error) {
		data, err := p.Bytes()
		if err != nil {
			return nil, err
		}
		out := make([]byte, len(data))
		rb := sp.Inner() * size
		for r := 0; r < p.Shape[0]; r++ {
			row := data[r*rb : (r+1)*rb]
			copy(out[r*rb:(r+1)*rb], reorderVRows(row, size, 0, sp.KeyHeads, sp.ValueHeads, sp.HeadDim))
		}
		return out, nil
	})
}

// plusOne is a zero-centred RMSNorm weight stored as 1 + w, F32.
func plusOne(_ *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error) {
	p := parts[0]
	t := &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{p.NumElements()}}
	return merged(t, parts, func() ([]byte, error) {
		v, err := p.F32()
		if err != nil {
			return nil, err
		}
		out := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x+1))
		}
		return out, nil
	})
}
