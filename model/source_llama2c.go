package model

import "wasmllm/loader"

// FromLlama2C maps a llama2.c checkpoint onto canonical weights. Its Q/K
// are in Meta's interleaved-pairs layout, like GGUF llama.
func FromLlama2C(m *loader.Llama2C) (*Weights, error) {
	lc := m.Config
	c := Config{
		Arch: ArchLlama, Hidden: lc.Dim, Layers: lc.Layers, Heads: lc.Heads, KVHeads: lc.KVHeads,
		HeadDim: lc.HeadDim(), FFN: lc.HiddenDim, RMSEps: 1e-5, RopeTheta: 10000, MaxContext: lc.SeqLen,
	}
	return fromGGUFTensors(m.File, c, llama2cNamed{m}, func(field string) string { return "header " + field })
}

type llama2cNamed struct{ *loader.Llama2C }

func (l llama2cNamed) Has(name string) bool {
	for _, t := range l.Tensors {
		if t.Name == name {
			return true
		}
	}
	return false
}
