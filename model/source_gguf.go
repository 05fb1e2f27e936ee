package model

import (
	"cmp"
	"fmt"

	"wasmllm/loader"
)

// FromGGUF maps a parsed GGUF file of architecture llama, qwen2, qwen3,
// qwen3moe, qwen35, qwen35moe, phi3, gemma3 or gemma4 onto a Config and canonical tensors. Tensor data is shared with g where no
// merge is needed.
func FromGGUF(g *loader.GGUF) (*Weights, error) { return fromGGUF(g, g, LoadOptions{}) }

// FromGGUFOptions is FromGGUF reading what o asks for beyond the trunk
// (a qwen35 file's NextN/MTP block).
func FromGGUFOptions(g *loader.GGUF, o LoadOptions) (*Weights, error) { return fromGGUF(g, g, o) }

// fromGGUF reads the Config from g's metadata and the tensors from src.
func fromGGUF(g *loader.GGUF, src tensorSource, o LoadOptions) (*Weights, error) {
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
	case ArchQwen35, ArchQwen35MoE:
		c.QKNorm, c.RopeNeoX, c.AttnOutputGate = true, true, true
	case ArchPhi3, ArchGemma3, ArchGemma4:
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
	if arch == ArchQwen35 || arch == ArchQwen35MoE {
		if err := ggufHybrid(g, arch, &c); err != nil {
			return nil, err
		}
	}
	switch arch {
	case ArchPhi3:
		if err := ggufPhi3(g, src, &c); err != nil {
			return nil, err
		}
	case ArchGemma3:
		if err := ggufGemma3(g, arch, &c); err != nil {
			return nil, err
		}
	case ArchGemma4:
		if err := ggufGemma4(g, arch, &c); err != nil {
			return nil, err
		}
	}
	if err := c.applyLoadOptions(g.File, "metadata "+arch+".nextn_predict_layers", o); err != nil {
		return nil, err
	}
	if arch == ArchQwen3MoE || arch == ArchQwen35MoE {
		if c.Experts, err = req("expert_count"); err != nil {
			return nil, err
		}
		if c.ExpertsUsed, err = req("expert_used_count"); err != nil {
			return nil, err
		}
		if c.ExpertFFN, err = req("expert_feed_forward_length"); err != nil {
			return nil, err
		}
		// llama.cpp always renormalises qwen3moe's and qwen35moe's top-k
		// weights.
		c.NormTopK = true
		if v, ok := g.Bool(arch + ".expert_weights_norm"); ok {
			c.NormTopK = v
		}
	} else if c.FFN == 0 { // gemma4's per-layer widths are read already
		if c.FFN, err = req("feed_forward_length"); err != nil {
			return nil, err
		}
	}
	if typ, ok := g.String(arch + ".rope.scaling.type"); ok && typ != "none" && typ != "llama3" && arch != ArchGemma3 && arch != ArchGemma4 {
		return nil, ferr("metadata "+arch+".rope.scaling.type", fmt.Errorf("%w: %q", loader.ErrUnsupported, typ))
	}
	return fromGGUFTensors(g.File, c, src, func(field string) string {
		if k, ok := ggufKeys[field]; ok {
			return "metadata " + arch + "." + k
		}
		if k, ok := ggufHybridKeys[field]; ok {
			return "metadata " + arch + "." + k
		}
		if k, ok := ggufGemmaKeys[field]; ok {
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

// ggufTensors are llama.cpp's GGUF names of the canonical tensors. A GGUF
// without output.weight ties its embeddings.
var ggufTensors = tensorTable{
	NameEmbed:      one("token_embd.weight"),
	NameRopeFreqs:  optional("rope_freqs.weight"),
	NameNorm:       one("output_norm.weight"),
	NameLMHead:     optional("output.weight"),
	NameAttnNorm:   one("blk.%d.attn_norm.weight"),
	NameQKV:        rows("blk.%d.attn_q.weight", "blk.%d.attn_k.weight", "blk.%d.attn_v.weight"),
	NameQKVBias:    biases("blk.%d.attn_q.bias", "blk.%d.attn_k.bias", "blk.%d.attn_v.bias"),
	NameQNorm:      one("blk.%d.attn_q_norm.weight"),
	NameKNorm:      one("blk.%d.attn_k_norm.weight"),
	NameAttnOut:    one("blk.%d.attn_output.weight"),
	NameFFNNorm:    one("blk.%d.ffn_norm.weight"),
	NameRouter:     one("blk.%d.ffn_gate_inp.weight"),
	NameGateUpExps: interleaved("blk.%d.ffn_gate_exps.weight", "blk.%d.ffn_up_exps.weight"),
	NameDownExps:   one("blk.%d.ffn_down_exps.weight"),
	NameGateUp:     rows("blk.%d.ffn_gate.weight", "blk.%d.ffn_up.weight"),
	NameDown:       one("blk.%d.ffn_down.weight"),
}

// GGUFMerges lists, for each canonical tensor of a model of config c that
// is merged from several GGUF tensors, their GGUF names in merge order.
func GGUFMerges(c *Config) map[string][]string {
	merges := map[string][]string{}
	table := ggufTable(c.Arch)
	for l, sp := range c.Specs() {
		for _, ct := range layerTensors {
			if row := table[ct.name]; len(row.src) > 1 && ct.in(&sp) {
				names := make([]string, len(row.src))
				for i, s := range row.src {
					names[i] = fmt.Sprintf(s, l)
				}
				merges[fmt.Sprintf(ct.name, l)] = names
			}
		}
	}
	return merges
}

// fromGGUFTensors maps tensors under GGUF names (GGUF files, llama2.c
// checkpoints) onto canonical weights; c's Vocab and TiedEmbeddings are
// filled in from the tensors. The config is validated (key names the
// source's field of a canonical one) before the layers are read.
func fromGGUFTensors(file string, c Config, src tensorSource, key func(string) string) (*Weights, error) {
	return mapTensors(file, c, src, ggufTable(c.Arch), func(w *Weights) error {
		if sh := w.Tensors[NameEmbed].Shape; len(sh) != 2 {
			return &loader.FormatError{File: file, Field: "tensor " + NameEmbed + " shape", Offset: -1,
				Err: fmt.Errorf("%w: %v, want (V, D)", loader.ErrCorrupt, sh)}
		}
		w.Config.Vocab = w.Tensors[NameEmbed].Shape[0]
		w.Config.TiedEmbeddings = w.Tensors[NameLMHead] == nil
		return w.Config.validateIn(file, func(field string) string {
			if field == "vocab_size" {
				return "tensor " + NameEmbed + " shape"
			}
			return key(field)
		})
	})
}
