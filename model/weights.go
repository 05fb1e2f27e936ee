package model

import (
	"fmt"
	"slices"
	"sort"

	"wasmllm/loader"
)

// Canonical tensor names. Every source (GGUF, Hugging Face, llama2.c,
// converted manifests) is mapped onto these, with Q/K/V and gate/up merged
// as the forward pass reads them.
const (
	NameEmbed     = "token_embd.weight"  // (V, D)
	NameNorm      = "output_norm.weight" // (D)
	NameLMHead    = "output.weight"      // (V, D); absent when tied
	NameRopeFreqs = "rope_freqs.weight"  // (Dh/2) optional llama3 frequency divisors
)

// Per-layer canonical names; format with the layer index.
const (
	NameAttnNorm   = "blk.%d.attn_norm.weight"        // (D)
	NameQKV        = "blk.%d.attn_qkv.weight"         // ((H+2Hk)*Dh, D)
	NameQKVBias    = "blk.%d.attn_qkv.bias"           // ((H+2Hk)*Dh) f32, q, k, v biases as NameQKV's rows; only when Config.QKVBias
	NameQNorm      = "blk.%d.attn_q_norm.weight"      // (Dh)
	NameKNorm      = "blk.%d.attn_k_norm.weight"      // (Dh)
	NameAttnOut    = "blk.%d.attn_output.weight"      // (D, H*Dh)
	NameFFNNorm    = "blk.%d.ffn_norm.weight"         // (D)
	NameGateUp     = "blk.%d.ffn_gate_up.weight"      // (2F, D)
	NameDown       = "blk.%d.ffn_down.weight"         // (D, F)
	NameRouter     = "blk.%d.ffn_gate_inp.weight"     // (E, D)
	NameGateUpExps = "blk.%d.ffn_gate_up_exps.weight" // (E, 2F, D)
	NameDownExps   = "blk.%d.ffn_down_exps.weight"    // (E, D, F)
)

// Weights is a model's config and its canonical tensors on the host. From
// FromGGUFLazy and FromHFLazy the tensors are lazy: their data is read when
// loaded (see loader.Tensor.Load).
type Weights struct {
	Config  Config
	Tensors map[string]*loader.Tensor
	// Uploaded holds tensors already on the backend, uploaded straight from
	// their bytes elsewhere (the browser writes shard bytes into GPU
	// buffers). Their entries in Tensors carry name, dtype and shape but no
	// Data, and Build takes them from here instead of uploading.
	Uploaded map[string]Tensor
	// Source names where the weights came from, for messages.
	Source string
}

// Names returns the tensor names in a stable order.
func (w *Weights) Names() []string {
	names := make([]string, 0, len(w.Tensors))
	for n := range w.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Get returns a tensor, or a typed error naming the source when it is missing.
func (w *Weights) Get(name string) (*loader.Tensor, error) {
	t, ok := w.Tensors[name]
	if !ok {
		return nil, &loader.FormatError{File: w.Source, Field: "tensor " + name, Offset: -1, Err: loader.ErrNotFound}
	}
	return t, nil
}

// Check verifies that every tensor the config needs is present with the
// right shape and a consistent byte size.
func (w *Weights) Check() error {
	c := &w.Config
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: %w", w.Source, err)
	}
	D, Dh, V := c.Hidden, c.HeadDim, c.Vocab
	want := map[string][]int{NameEmbed: {V, D}, NameNorm: {D}}
	if !c.TiedEmbeddings {
		want[NameLMHead] = []int{V, D}
	}
	for l := 0; l < c.Layers; l++ {
		f := func(s string) string { return fmt.Sprintf(s, l) }
		want[f(NameAttnNorm)] = []int{D}
		want[f(NameQKV)] = []int{(c.Heads + 2*c.KVHeads) * Dh, D}
		if c.QKVBias {
			want[f(NameQKVBias)] = []int{(c.Heads + 2*c.KVHeads) * Dh}
		}
		want[f(NameAttnOut)] = []int{D, c.Heads * Dh}
		want[f(NameFFNNorm)] = []int{D}
		if c.QKNorm {
			want[f(NameQNorm)] = []int{Dh}
			want[f(NameKNorm)] = []int{Dh}
		}
		if c.MoE() {
			want[f(NameRouter)] = []int{c.Experts, D}
			want[f(NameGateUpExps)] = []int{c.Experts, 2 * c.ExpertFFN, D}
			want[f(NameDownExps)] = []int{c.Experts, D, c.ExpertFFN}
		} else {
			want[f(NameGateUp)] = []int{2 * c.FFN, D}
			want[f(NameDown)] = []int{D, c.FFN}
		}
	}
	for name, shape := range want {
		t, err := w.Get(name)
		if err != nil {
			return err
		}
		if !slices.Equal(t.Shape, shape) {
			return &loader.FormatError{File: w.Source, Field: "tensor " + name + " shape", Offset: -1,
				Err: fmt.Errorf("%w: got %v, want %v", loader.ErrCorrupt, t.Shape, shape)}
		}
		if _, ok := w.Uploaded[name]; ok && t.Data == nil {
			continue
		}
		if err := t.CheckSize(); err != nil {
			return &loader.FormatError{File: w.Source, Field: "tensor " + name, Offset: -1, Err: err}
		}
	}
	if t, ok := w.Tensors[NameRopeFreqs]; ok && t.NumElements() != Dh/2 {
		return &loader.FormatError{File: w.Source, Field: "tensor " + NameRopeFreqs + " shape", Offset: -1,
			Err: fmt.Errorf("%w: %d elements, want %d", loader.ErrCorrupt, t.NumElements(), Dh/2)}
	}
	return nil
}
