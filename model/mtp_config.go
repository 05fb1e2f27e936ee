package model

import (
	"fmt"

	"wasmllm/loader"
)

// The NextN/MTP block's own canonical tensors (llama.cpp's names), besides
// a full-attention layer's (NameAttnNorm ... NameDown) at the same index:
// the block after the trunk is layer Config.Layers.
const (
	NameMTPEHProj   = "blk.%d.nextn.eh_proj.weight"          // (D, 2D): [embedding | hidden] -> D
	NameMTPENorm    = "blk.%d.nextn.enorm.weight"            // (D) the embedding's RMSNorm
	NameMTPHNorm    = "blk.%d.nextn.hnorm.weight"            // (D) the trunk hidden's RMSNorm
	NameMTPHeadNorm = "blk.%d.nextn.shared_head_norm.weight" // (D) before the LM head
)

// mtpTensors are the block's tensors beside its layer's.
var mtpTensors = []layerTensor{
	{NameMTPENorm, nil, layerHidden},
	{NameMTPHNorm, nil, layerHidden},
	{NameMTPEHProj, nil, func(c *Config, _ *LayerSpec) []int { return []int{c.Hidden, 2 * c.Hidden} }},
	{NameMTPHeadNorm, nil, layerHidden},
}

// MaxMTPLayers is how many NextN/MTP blocks a model may load: Qwen3.5 has
// one, and llama.cpp's graph runs one.
const MaxMTPLayers = 1

// LoadOptions choose what a load reads beyond the trunk.
type LoadOptions struct {
	// MTP loads the source's NextN/MTP block (Config.MTPLayers; an error
	// when it has none). Default loads skip it, as llama.cpp does.
	MTP bool
}

// MTPSpec is the spec of the NextN/MTP block's layer: a full-attention
// layer with the trunk's attention and channel mixer.
func (c *Config) MTPSpec() LayerSpec {
	one := *c
	one.Layers, one.LayerTypes = 1, []string{LayerFullAttention}
	return one.Specs()[0]
}

// validateMTP checks MTPLayers against the family: only the hybrid
// families have the block.
func (c *Config) validateMTP() error {
	if c.MTPLayers == 0 {
		return nil
	}
	if c.MTPLayers < 0 || c.MTPLayers > MaxMTPLayers {
		return &ConfigError{"mtp_num_hidden_layers", c.MTPLayers, fmt.Sprintf("want 0..%d", MaxMTPLayers)}
	}
	if fam, _ := FamilyOf(c.Arch); !fam.DeltaNet {
		return &ConfigError{"mtp_num_hidden_layers", c.MTPLayers, fmt.Sprintf("architecture %s has no NextN/MTP block", c.Arch)}
	}
	return nil
}

// ErrNoMTP is wrapped by the error of a load that asks for an MTP block
// the source does not have.
var ErrNoMTP = fmt.Errorf("%w: the model has no NextN/MTP block", loader.ErrNotFound)

// applyLoadOptions sets c.MTPLayers as o asks, from what the source holds
// (c.mtpAvailable); key is the source's name of that count.
func (c *Config) applyLoadOptions(file, key string, o LoadOptions) error {
	c.MTPLayers = 0
	if !o.MTP {
		return nil
	}
	if c.mtpAvailable == 0 {
		return &loader.FormatError{File: file, Field: key, Offset: -1, Err: ErrNoMTP}
	}
	if c.mtpAvailable > MaxMTPLayers {
		return &loader.FormatError{File: file, Field: key, Offset: -1,
			Err: fmt.Errorf("%w: %d NextN/MTP blocks (at most %d run)", loader.ErrUnsupported, c.mtpAvailable, MaxMTPLayers)}
	}
	c.MTPLayers = c.mtpAvailable
	return nil
}
