package model

import (
	"cmp"
	"fmt"

	"wasmllm/loader"
)

// FromGGUF maps a parsed GGUF file of architecture llama, qwen2, qwen3 or qwen3moe
// onto a Config and canonical tensors. Tensor data is shared with g where no
// merge is needed.
func FromGGUF(g *loader.GGUF) (*Weights, error) { return fromGGUF(g, g) }

// fromGGUF reads the Config from g's metadata and the tensors from src.
func fromGGUF(g *loader.GGUF, src ggufNamed) (*Weights, error) {
	arch, ok := g.String("general.architecture")
	if !ok {
		return nil, &loader.FormatError{File: g.File, Field: "metadata general.architecture", Offset: -1, Err: loader.ErrNotFound}
	}
	ferr := func(field string, err error) error {
		return &loader.FormatError{File: g.File, Field: field, Offset: -1, Err: err}
	}
	req := func(key string) (int, error) {
		v, ok := g.Int(arch + "." + key)
		if !ok {
			return 0, ferr("metadata "+arch+"."+key, loader.ErrNotFound)
		}
		if v <= 0 || v > 1<<31 {
			return 0, ferr("metadata "+arch+"."+key, fmt.Errorf("%w: %d", loader.ErrCorrupt, v))
		}
		return int(v), nil
	}
	var optErr error
	opt := func(key string, def int) int {
		v, ok := g.Int(arch + "." + key)
		if !ok {
			return def
		}
		if v <= 0 || v > 1<<31 {
			optErr = cmp.Or(optErr, ferr("metadata "+arch+"."+key, fmt.Errorf("%w: %d", loader.ErrCorrupt, v)))
			return def
		}
		return int(v)
	}
	c := Config{Arch: arch}
	switch arch {
	case ArchLlama:
	case ArchQwen2:
		// llama.cpp's qwen2 always has the q/k/v biases and NEOX RoPE.
		c.QKVBias, c.RopeNeoX = true, true
	case ArchQwen3, ArchQwen3MoE:
		c.QKNorm, c.RopeNeoX = true, true
	default:
		return nil, ferr("metadata general.architecture", fmt.Errorf("%w: architecture %q", loader.ErrUnsupported, arch))
	}
	// llama.cpp reads optional q/k/v biases in llama files as well (qwen2
	// always has them); an output projection bias has no op here.
	if src.Has("blk.0.attn_output.bias") {
		return nil, ferr("tensor blk.0.attn_output.bias", fmt.Errorf("%w: attention output bias", loader.ErrUnsupported))
	}
	if arch == ArchLlama && src.Has("blk.0.attn_q.bias") {
		c.QKVBias = true
	}
	var err error
	if c.Hidden, err = req("embedding_length"); err != nil {
		return nil, err
	}
	if c.Layers, err = req("block_count"); err != nil {
		return nil, err
	}
	if c.Heads, err = req("attention.head_count"); err != nil {
		return nil, err
	}
	c.KVHeads = opt("attention.head_count_kv", c.Heads)
	c.HeadDim = opt("attention.key_length", c.Hidden/c.Heads)
	c.MaxContext = opt("context_length", 2048)
	if optErr != nil {
		return nil, optErr
	}
	c.RopeTheta = 10000
	if v, ok := g.Float(arch + ".rope.freq_base"); ok {
		c.RopeTheta = v
	}
	c.RMSEps = 1e-5
	if v, ok := g.Float(arch + ".attention.layer_norm_rms_epsilon"); ok {
		c.RMSEps = v
	}
	if arch == ArchQwen3MoE {
		if c.Experts, err = req("expert_count"); err != nil {
			return nil, err
		}
		if c.ExpertsUsed, err = req("expert_used_count"); err != nil {
			return nil, err
		}
		if c.ExpertFFN, err = req("expert_feed_forward_length"); err != nil {
			return nil, err
		}
		// llama.cpp always renormalises qwen3moe's top-k weights.
		c.NormTopK = true
		if v, ok := g.Bool(arch + ".expert_weights_norm"); ok {
			c.NormTopK = v
		}
	} else if c.FFN, err = req("feed_forward_length"); err != nil {
		return nil, err
	}
	if typ, ok := g.String(arch + ".rope.scaling.type"); ok && typ != "none" && typ != "llama3" {
		return nil, ferr("metadata "+arch+".rope.scaling.type", fmt.Errorf("%w: %q", loader.ErrUnsupported, typ))
	}
	return fromGGUFNames(g.File, c, src, func(field string) string {
		if k, ok := ggufKeys[field]; ok {
			return "metadata " + arch + "." + k
		}
		return field
	})
}

// ggufKeys are the GGUF metadata keys (after "ARCH.") of canonical Config
// fields.
var ggufKeys = map[string]string{
	"hidden_size":             "embedding_length",
	"num_layers":              "block_count",
	"num_heads":               "attention.head_count",
	"num_kv_heads":            "attention.head_count_kv",
	"head_dim":                "attention.key_length",
	"intermediate_size":       "feed_forward_length",
	"max_position_embeddings": "context_length",
	"rms_norm_eps":            "attention.layer_norm_rms_epsilon",
	"rope_theta":              "rope.freq_base",
	"num_experts":             "expert_count",
	"num_experts_per_tok":     "expert_used_count",
	"moe_intermediate_size":   "expert_feed_forward_length",
}

// ggufNamed is a source of tensors under llama.cpp's GGUF names.
type ggufNamed interface {
	tensorSource
	Has(name string) bool
}

// fromGGUFNames maps tensors with GGUF names (GGUF files, llama2.c
// checkpoints) onto canonical weights; c's Vocab and TiedEmbeddings are
// filled in from the tensors. The config is validated (key names the
// source's field of a canonical one) before the layers are read.
func fromGGUFNames(file string, c Config, g ggufNamed, key func(string) string) (*Weights, error) {
	ferr := func(field string, err error) error {
		return &loader.FormatError{File: file, Field: field, Offset: -1, Err: err}
	}
	var err error
	w := &Weights{Config: c, Tensors: map[string]*loader.Tensor{}, Source: file}
	get := func(name string) (*loader.Tensor, error) { return g.Tensor(name) }
	put := func(name string, t *loader.Tensor) { t.Name = name; w.Tensors[name] = t }
	for _, name := range []string{NameEmbed, NameNorm} {
		t, err := get(name)
		if err != nil {
			return nil, err
		}
		put(name, t)
	}
	if sh := w.Tensors[NameEmbed].Shape; len(sh) != 2 {
		return nil, ferr("tensor "+NameEmbed+" shape", fmt.Errorf("%w: %v, want (V, D)", loader.ErrCorrupt, sh))
	}
	w.Config.Vocab = w.Tensors[NameEmbed].Shape[0]
	if err := w.Config.validateIn(file, func(field string) string {
		if field == "vocab_size" {
			return "tensor " + NameEmbed + " shape"
		}
		return key(field)
	}); err != nil {
		return nil, err
	}
	c = w.Config
	if g.Has(NameLMHead) {
		t, _ := get(NameLMHead)
		put(NameLMHead, t)
	} else {
		w.Config.TiedEmbeddings = true
	}
	if g.Has(NameRopeFreqs) {
		t, _ := get(NameRopeFreqs)
		put(NameRopeFreqs, t)
	}
	for l := 0; l < c.Layers; l++ {
		f := func(s string) string { return fmt.Sprintf(s, l) }
		one := func(dst, src string) error {
			t, err := get(fmt.Sprintf(src, l))
			if err != nil {
				return err
			}
			put(f(dst), t)
			return nil
		}
		if err := one(NameAttnNorm, "blk.%d.attn_norm.weight"); err != nil {
			return nil, err
		}
		if err := one(NameAttnOut, "blk.%d.attn_output.weight"); err != nil {
			return nil, err
		}
		if err := one(NameFFNNorm, "blk.%d.ffn_norm.weight"); err != nil {
			return nil, err
		}
		var qkv [3]*loader.Tensor
		for i, s := range []string{"q", "k", "v"} {
			if qkv[i], err = get(fmt.Sprintf("blk.%d.attn_%s.weight", l, s)); err != nil {
				return nil, err
			}
		}
		merged, err := concatRows(f(NameQKV), qkv[:]...)
		if err != nil {
			return nil, ferr("tensor "+f(NameQKV), err)
		}
		put(f(NameQKV), merged)
		if c.QKVBias {
			var bias [3]*loader.Tensor
			for i, s := range []string{"q", "k", "v"} {
				if bias[i], err = get(fmt.Sprintf("blk.%d.attn_%s.bias", l, s)); err != nil {
					return nil, err
				}
			}
			mb, err := concatBias(f(NameQKVBias), bias[:]...)
			if err != nil {
				return nil, ferr("tensor "+f(NameQKVBias), err)
			}
			put(f(NameQKVBias), mb)
		}
		if c.QKNorm {
			if err := one(NameQNorm, "blk.%d.attn_q_norm.weight"); err != nil {
				return nil, err
			}
			if err := one(NameKNorm, "blk.%d.attn_k_norm.weight"); err != nil {
				return nil, err
			}
		}
		if c.MoE() {
			if err := one(NameRouter, "blk.%d.ffn_gate_inp.weight"); err != nil {
				return nil, err
			}
			if err := one(NameDownExps, "blk.%d.ffn_down_exps.weight"); err != nil {
				return nil, err
			}
			gate, err := get(f("blk.%d.ffn_gate_exps.weight"))
			if err != nil {
				return nil, err
			}
			up, err := get(f("blk.%d.ffn_up_exps.weight"))
			if err != nil {
				return nil, err
			}
			gu, err := interleaveExperts(f(NameGateUpExps), gate, up)
			if err != nil {
				return nil, ferr("tensor "+f(NameGateUpExps), err)
			}
			put(f(NameGateUpExps), gu)
			continue
		}
		if err := one(NameDown, "blk.%d.ffn_down.weight"); err != nil {
			return nil, err
		}
		gate, err := get(f("blk.%d.ffn_gate.weight"))
		if err != nil {
			return nil, err
		}
		up, err := get(f("blk.%d.ffn_up.weight"))
		if err != nil {
			return nil, err
		}
		gu, err := concatRows(f(NameGateUp), gate, up)
		if err != nil {
			return nil, ferr("tensor "+f(NameGateUp), err)
		}
		put(f(NameGateUp), gu)
	}
	if err := w.Check(); err != nil {
		return nil, err
	}
	return w, nil
}
