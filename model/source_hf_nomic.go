package model

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"wasmllm/loader"
)

// hfNomicConfig is the part of a NomicBertModel's config.json
// (model_type nomic_bert: nomic-embed-text v1 / v1.5) the encoder reads.
type hfNomicConfig struct {
	Vocab          int      `json:"vocab_size"`
	Hidden         int      `json:"n_embd"`
	Layers         int      `json:"n_layer"`
	Heads          int      `json:"n_head"`
	FFN            int      `json:"n_inner"`
	MaxPos         int      `json:"n_positions"`
	TypeVocab      int      `json:"type_vocab_size"`
	NormEps        float64  `json:"layer_norm_epsilon"`
	RotaryBase     float64  `json:"rotary_emb_base"`
	RotaryFraction *float64 `json:"rotary_emb_fraction"`
	Interleaved    bool     `json:"rotary_emb_interleaved"`
	Activation     string   `json:"activation_function"`
	QKVBias        bool     `json:"qkv_proj_bias"`
	FC1Bias        *bool    `json:"mlp_fc1_bias"`
	FC2Bias        *bool    `json:"mlp_fc2_bias"`
	Prenorm        bool     `json:"prenorm"`
	Causal         bool     `json:"causal"`
}

// hfNomicTensors are NomicBertModel's names of the encoder's tensors, as
// llama.cpp's converter maps them (gguf-py tensor_mapping: emb_ln,
// attn.Wqkv, attn.out_proj, norm1, mlp.fc11 = ffn_up, mlp.fc12 = ffn_gate,
// mlp.fc2 = ffn_down, norm2). Per-layer names take the layer index.
var hfNomicTensors = map[string]string{
	"token_embd.weight":               "embeddings.word_embeddings.weight",
	"token_types.weight":              "embeddings.token_type_embeddings.weight",
	"token_embd_norm.weight":          "emb_ln.weight",
	"token_embd_norm.bias":            "emb_ln.bias",
	NameEncQKV:                        "encoder.layers.%d.attn.Wqkv.weight",
	"blk.%d.attn_output.weight":       "encoder.layers.%d.attn.out_proj.weight",
	"blk.%d.attn_output_norm.weight":  "encoder.layers.%d.norm1.weight",
	"blk.%d.attn_output_norm.bias":    "encoder.layers.%d.norm1.bias",
	"blk.%d.ffn_up.weight":            "encoder.layers.%d.mlp.fc11.weight",
	"blk.%d.ffn_gate.weight":          "encoder.layers.%d.mlp.fc12.weight",
	"blk.%d.ffn_down.weight":          "encoder.layers.%d.mlp.fc2.weight",
	"blk.%d.layer_output_norm.weight": "encoder.layers.%d.norm2.weight",
	"blk.%d.layer_output_norm.bias":   "encoder.layers.%d.norm2.bias",
}

// nomicFromHF reads a Hugging Face folder of nomic-bert: config.json
// (model_type nomic_bert), safetensors and sentence-transformers'
// 1_Pooling (mean when there is none). What the nomic-bert row cannot run
// (biases, prenorm, partial or interleaved rotary, another activation) is
// a *loader.FormatError naming the field.
func nomicFromHF(dir, cfgPath string, data []byte) (*EncoderWeights, error) {
	ferr := func(file, field string, err error) error {
		return &loader.FormatError{File: file, Field: field, Offset: -1, Err: err}
	}
	var hc hfNomicConfig
	if err := json.Unmarshal(data, &hc); err != nil {
		return nil, ferr(cfgPath, "", fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
	}
	unsupported := func(field string, v any) error {
		return ferr(cfgPath, field, fmt.Errorf("%w: %v", loader.ErrUnsupported, v))
	}
	switch {
	case hc.Activation != "" && hc.Activation != "swiglu":
		return nil, unsupported("activation_function", hc.Activation)
	case hc.QKVBias:
		return nil, unsupported("qkv_proj_bias", true)
	case hc.FC1Bias != nil && *hc.FC1Bias:
		return nil, unsupported("mlp_fc1_bias", true)
	case hc.FC2Bias != nil && *hc.FC2Bias:
		return nil, unsupported("mlp_fc2_bias", true)
	case hc.Prenorm:
		return nil, unsupported("prenorm", true)
	case hc.Causal:
		return nil, unsupported("causal", true)
	case hc.Interleaved:
		return nil, unsupported("rotary_emb_interleaved", true)
	case hc.RotaryFraction != nil && *hc.RotaryFraction != 1:
		return nil, unsupported("rotary_emb_fraction", *hc.RotaryFraction)
	}
	c := EncoderConfig{Arch: ArchNomicBert, Vocab: hc.Vocab, Hidden: hc.Hidden, Layers: hc.Layers, Heads: hc.Heads, FFN: hc.FFN,
		MaxLen: hc.MaxPos, NormEps: hc.NormEps, RopeTheta: hc.RotaryBase, TokenTypes: hc.TypeVocab, Pooling: PoolMean}
	if c.NormEps == 0 {
		c.NormEps = 1e-12
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	if c.TokenTypes == 0 {
		c.TokenTypes = 2
	}
	p, err := readHFPooling(filepath.Join(dir, "1_Pooling", "config.json"))
	if err != nil {
		return nil, err
	}
	if p != "" {
		c.Pooling = p
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	st, err := loader.OpenSafetensors(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	w := &EncoderWeights{Config: c, Tensors: map[string]*loader.Tensor{}, Source: dir}
	get := func(canon string, l int, shape ...int) *loader.Tensor {
		if err != nil {
			return nil
		}
		name := hfNomicTensors[canon]
		if l >= 0 {
			name = fmt.Sprintf(name, l)
		}
		var t *loader.Tensor
		if t, err = st.Tensor(name); err != nil {
			return nil
		}
		if !slices.Equal(t.Shape, shape) {
			err = ferr(dir, "tensor "+name, fmt.Errorf("%w: shape %v, want %v", loader.ErrCorrupt, t.Shape, shape))
			return nil
		}
		return t
	}
	D, F := c.Hidden, c.FFN
	put := func(to string, t *loader.Tensor) {
		if err == nil {
			w.Tensors[to] = t
		}
	}
	put("token_embd.weight", get("token_embd.weight", -1, c.Vocab, D))
	if types := get("token_types.weight", -1, c.TokenTypes, D); types != nil {
		var v []float32
		if v, err = types.F32(); err == nil {
			w.Tensors[NameTokenType0] = f32Vector(NameTokenType0, v[:D])
		}
	}
	put("token_embd_norm.weight", get("token_embd_norm.weight", -1, D))
	put("token_embd_norm.bias", get("token_embd_norm.bias", -1, D))
	for l := 0; l < c.Layers && err == nil; l++ {
		gg := func(s string) string { return fmt.Sprintf(s, l) }
		put(gg(NameEncQKV), get(NameEncQKV, l, 3*D, D))
		put(gg("blk.%d.attn_output.weight"), get("blk.%d.attn_output.weight", l, D, D))
		for _, n := range []string{"blk.%d.attn_output_norm.weight", "blk.%d.attn_output_norm.bias", "blk.%d.layer_output_norm.weight", "blk.%d.layer_output_norm.bias"} {
			put(gg(n), get(n, l, D))
		}
		gate, up := get("blk.%d.ffn_gate.weight", l, F, D), get("blk.%d.ffn_up.weight", l, F, D)
		if err == nil {
			var gu *loader.Tensor
			gu, err = concatRows(gg(NameEncGateUp), gate, up)
			put(gg(NameEncGateUp), gu)
		}
		put(gg("blk.%d.ffn_down.weight"), get("blk.%d.ffn_down.weight", l, D, F))
	}
	if err != nil {
		return nil, err
	}
	return w, widenVectors(w)
}

// widenVectors makes w's vectors (biases, norms) F32: they are added to
// f32 activations.
func widenVectors(w *EncoderWeights) error {
	for name, t := range w.Tensors {
		if len(t.Shape) == 1 && t.DType != loader.F32 {
			v, err := t.F32()
			if err != nil {
				return err
			}
			w.Tensors[name] = f32Vector(name, v)
		}
	}
	return nil
}
