package model

import (
	"errors"
	"strings"
	"testing"

	"wasmllm/loader"
)

// mapSource is a tensorSource over tensors in memory.
type mapSource map[string]*loader.Tensor

func (m mapSource) Has(name string) bool { return m[name] != nil }

func (m mapSource) Tensor(name string) (*loader.Tensor, error) {
	t := m[name]
	if t == nil {
		return nil, &loader.FormatError{File: "mem", Field: "tensor " + name, Offset: -1, Err: loader.ErrNotFound}
	}
	c := *t
	return &c, nil
}

// TestMapTensorsErrors maps a one-layer Llama in Hugging Face names, whole
// and with one tensor missing or misshapen: a missing tensor is the
// source's error naming it, a failed merge or a wrong merged shape a
// *loader.FormatError naming the file and the canonical tensor.
func TestMapTensorsErrors(t *testing.T) {
	c := Config{Arch: ArchLlama, Vocab: 8, Hidden: 32, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 16, FFN: 32,
		RMSEps: 1e-5, RopeTheta: 1e4, RopeNeoX: true}
	shapes := map[string][]int{
		"model.embed_tokens.weight": {8, 32}, "model.norm.weight": {32}, "lm_head.weight": {8, 32},
		"model.layers.0.input_layernorm.weight": {32}, "model.layers.0.post_attention_layernorm.weight": {32},
		"model.layers.0.self_attn.q_proj.weight": {32, 32}, "model.layers.0.self_attn.k_proj.weight": {16, 32},
		"model.layers.0.self_attn.v_proj.weight": {16, 32}, "model.layers.0.self_attn.o_proj.weight": {32, 32},
		"model.layers.0.mlp.gate_proj.weight": {32, 32}, "model.layers.0.mlp.up_proj.weight": {32, 32},
		"model.layers.0.mlp.down_proj.weight": {32, 32},
	}
	source := func(name string, shape []int) mapSource {
		src := mapSource{}
		for n, sh := range shapes {
			if n == name {
				if shape == nil {
					continue
				}
				sh = shape
			}
			src[n] = testTensor(t, n, loader.F32, sh, float32(len(src)), nil)
		}
		return src
	}
	w, err := mapTensors("mem", c, source("", nil), hfTensors, nil)
	if err != nil {
		t.Fatal(err)
	}
	if qkv := w.Tensors["blk.0.attn_qkv.weight"]; qkv == nil || qkv.Name != "blk.0.attn_qkv.weight" || qkv.Shape[0] != 64 {
		t.Errorf("merged qkv %+v", qkv)
	}
	cases := []struct {
		tensor, field string
		shape         []int
		want          error
	}{
		{"model.layers.0.self_attn.k_proj.weight", "tensor model.layers.0.self_attn.k_proj.weight", nil, loader.ErrNotFound},
		{"model.layers.0.self_attn.k_proj.weight", "tensor blk.0.attn_qkv.weight", []int{16, 64}, nil},
		{"model.layers.0.self_attn.q_proj.weight", "tensor blk.0.attn_qkv.weight shape", []int{16, 32}, loader.ErrCorrupt},
		{"model.layers.0.mlp.up_proj.weight", "tensor model.layers.0.mlp.up_proj.weight", nil, loader.ErrNotFound},
	}
	for _, tc := range cases {
		_, err := mapTensors("mem", c, source(tc.tensor, tc.shape), hfTensors, nil)
		var fe *loader.FormatError
		if !errors.As(err, &fe) || fe.File != "mem" || fe.Field != tc.field || tc.want != nil && !errors.Is(err, tc.want) ||
			tc.want == nil && !strings.Contains(err.Error(), "merging") {
			t.Errorf("%s %v: %v, want a *loader.FormatError for %q", tc.tensor, tc.shape, err, tc.field)
		}
	}
}
