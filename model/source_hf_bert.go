package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"wasmllm/loader"
)

// hfBertConfig is the part of a BertModel's config.json the encoder reads.
type hfBertConfig struct {
	ModelType        string   `json:"model_type"`
	Architectures    []string `json:"architectures"`
	Vocab            int      `json:"vocab_size"`
	Hidden           int      `json:"hidden_size"`
	Layers           int      `json:"num_hidden_layers"`
	Heads            int      `json:"num_attention_heads"`
	FFN              int      `json:"intermediate_size"`
	MaxPos           int      `json:"max_position_embeddings"`
	TypeVocab        int      `json:"type_vocab_size"`
	NormEps          float64  `json:"layer_norm_eps"`
	HiddenAct        string   `json:"hidden_act"`
	PositionEmbedKnd *string  `json:"position_embedding_type"`
}

// hfPooling is sentence-transformers' 1_Pooling/config.json.
type hfPooling struct {
	CLS  bool `json:"pooling_mode_cls_token"`
	Mean bool `json:"pooling_mode_mean_tokens"`
	Last bool `json:"pooling_mode_lasttoken"`
	Max  bool `json:"pooling_mode_max_tokens"`
}

// HFPooling reads a decoder folder's sentence-transformers pooling
// (1_Pooling/config.json): last token or mean; ok is false when there is
// none (not an embedding model). CLS (a causal model's first row sees one
// token) and max are refused, as *loader.FormatError naming the field.
func HFPooling(dir string) (p Pooling, ok bool, err error) {
	path := filepath.Join(dir, "1_Pooling", "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false, nil
	}
	var hp hfPooling
	if err := json.Unmarshal(data, &hp); err != nil {
		return "", false, &loader.FormatError{File: path, Offset: -1, Err: fmt.Errorf("%w: %v", loader.ErrCorrupt, err)}
	}
	switch {
	case hp.Last:
		return PoolLast, true, nil
	case hp.Mean:
		return PoolMean, true, nil
	case hp.CLS:
		return "", false, &loader.FormatError{File: path, Field: "pooling_mode_cls_token", Offset: -1, Err: fmt.Errorf("%w: CLS pooling of a causal model", loader.ErrUnsupported)}
	}
	return "", false, &loader.FormatError{File: path, Field: "pooling_mode_max_tokens", Offset: -1, Err: fmt.Errorf("%w: no last-token or mean pooling", loader.ErrUnsupported)}
}

// IsEncoderHF reports whether dir's config.json is an encoder (bert,
// nomic_bert, gemma3_text: EmbeddingGemma).
func IsEncoderHF(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return false
	}
	var c hfBertConfig
	return json.Unmarshal(data, &c) == nil && (c.ModelType == "bert" || c.ModelType == "nomic_bert" || c.ModelType == "gemma3_text")
}

// readHFPooling reads sentence-transformers' 1_Pooling/config.json at
// path: "" when there is none; max pooling is refused.
func readHFPooling(path string) (Pooling, error) {
	pd, err := os.ReadFile(path)
	if err != nil {
		return "", nil
	}
	var p hfPooling
	if err := json.Unmarshal(pd, &p); err != nil {
		return "", &loader.FormatError{File: path, Offset: -1, Err: fmt.Errorf("%w: %v", loader.ErrCorrupt, err)}
	}
	switch {
	case p.Max:
		return "", &loader.FormatError{File: path, Field: "pooling_mode_max_tokens", Offset: -1, Err: loader.ErrUnsupported}
	case p.CLS:
		return PoolCLS, nil
	case p.Last:
		return PoolLast, nil
	}
	return PoolMean, nil
}

// EncoderFromHF reads a Hugging Face folder of a BERT encoder
// (BertModel: bge-small/base, all-MiniLM-L6-v2, snowflake-arctic-embed;
// or NomicBertModel, nomic_bert: nomicFromHF):
// config.json, safetensors (names with or without the "bert." prefix) and
// sentence-transformers' 1_Pooling/config.json for the pooling (mean when
// there is none, as sentence-transformers defaults). Errors are
// *loader.FormatError naming the file and field, or *ConfigError.
func EncoderFromHF(dir string) (*EncoderWeights, error) {
	cfgPath := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, err
	}
	ferr := func(file, field string, err error) error {
		return &loader.FormatError{File: file, Field: field, Offset: -1, Err: err}
	}
	var hc hfBertConfig
	if err := json.Unmarshal(data, &hc); err != nil {
		return nil, ferr(cfgPath, "", fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
	}
	switch hc.ModelType {
	case "nomic_bert":
		return nomicFromHF(dir, cfgPath, data)
	case "gemma3_text":
		return gemmaEmbedFromHF(dir, cfgPath, data)
	}
	if hc.ModelType != "bert" {
		return nil, ferr(cfgPath, "model_type", fmt.Errorf("%w: %q is not bert", loader.ErrUnsupported, hc.ModelType))
	}
	if hc.HiddenAct != "" && hc.HiddenAct != "gelu" {
		return nil, ferr(cfgPath, "hidden_act", fmt.Errorf("%w: %q (only gelu)", loader.ErrUnsupported, hc.HiddenAct))
	}
	if p := hc.PositionEmbedKnd; p != nil && *p != "absolute" {
		return nil, ferr(cfgPath, "position_embedding_type", fmt.Errorf("%w: %q (only absolute)", loader.ErrUnsupported, *p))
	}
	c := EncoderConfig{Arch: ArchBert, Vocab: hc.Vocab, Hidden: hc.Hidden, Layers: hc.Layers, Heads: hc.Heads, FFN: hc.FFN,
		MaxLen: hc.MaxPos, NormEps: hc.NormEps, TokenTypes: hc.TypeVocab, Pooling: PoolMean}
	if c.NormEps == 0 {
		c.NormEps = 1e-12
	}
	poolPath := filepath.Join(dir, "1_Pooling", "config.json")
	if pd, err := os.ReadFile(poolPath); err == nil {
		var p hfPooling
		if err := json.Unmarshal(pd, &p); err != nil {
			return nil, ferr(poolPath, "", fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
		}
		switch {
		case p.Max:
			return nil, ferr(poolPath, "pooling_mode_max_tokens", loader.ErrUnsupported)
		case p.CLS:
			c.Pooling = PoolCLS
		case p.Last:
			c.Pooling = PoolLast
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	st, err := loader.OpenSafetensors(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	prefix := ""
	if st.Has("bert.embeddings.word_embeddings.weight") {
		prefix = "bert."
	}
	w := &EncoderWeights{Config: c, Tensors: map[string]*loader.Tensor{}, Source: dir}
	get := func(name string, shape ...int) *loader.Tensor {
		if err != nil {
			return nil
		}
		var t *loader.Tensor
		if t, err = st.Tensor(prefix + name); err != nil {
			return nil
		}
		if !slices.Equal(t.Shape, shape) {
			err = ferr(dir, "tensor "+prefix+name, fmt.Errorf("%w: shape %v, want %v", loader.ErrCorrupt, t.Shape, shape))
			return nil
		}
		return t
	}
	put := func(to string, t *loader.Tensor) {
		if err == nil {
			w.Tensors[to] = t
		}
	}
	D, F := c.Hidden, c.FFN
	put("token_embd.weight", get("embeddings.word_embeddings.weight", c.Vocab, D))
	put("position_embd.weight", get("embeddings.position_embeddings.weight", c.MaxLen, D))
	if types := get("embeddings.token_type_embeddings.weight", c.TokenTypes, D); types != nil {
		var v []float32
		if v, err = types.F32(); err == nil {
			w.Tensors[NameTokenType0] = f32Vector(NameTokenType0, v[:D])
		}
	}
	put("token_embd_norm.weight", get("embeddings.LayerNorm.weight", D))
	put("token_embd_norm.bias", get("embeddings.LayerNorm.bias", D))
	for l := 0; l < c.Layers && err == nil; l++ {
		hf := func(s string) string { return fmt.Sprintf("encoder.layer.%d.%s", l, s) }
		gg := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		q, k, v := get(hf("attention.self.query.weight"), D, D), get(hf("attention.self.key.weight"), D, D), get(hf("attention.self.value.weight"), D, D)
		qb, kb, vb := get(hf("attention.self.query.bias"), D), get(hf("attention.self.key.bias"), D), get(hf("attention.self.value.bias"), D)
		if err == nil {
			var qkv, bias *loader.Tensor
			if qkv, err = concatRows(fmt.Sprintf(NameEncQKV, l), q, k, v); err == nil {
				bias, err = concatBias(fmt.Sprintf(NameEncQKVBias, l), qb, kb, vb)
			}
			put(fmt.Sprintf(NameEncQKV, l), qkv)
			put(fmt.Sprintf(NameEncQKVBias, l), bias)
		}
		put(gg("attn_output.weight"), get(hf("attention.output.dense.weight"), D, D))
		put(gg("attn_output.bias"), get(hf("attention.output.dense.bias"), D))
		put(gg("attn_output_norm.weight"), get(hf("attention.output.LayerNorm.weight"), D))
		put(gg("attn_output_norm.bias"), get(hf("attention.output.LayerNorm.bias"), D))
		put(gg("ffn_up.weight"), get(hf("intermediate.dense.weight"), F, D))
		put(gg("ffn_up.bias"), get(hf("intermediate.dense.bias"), F))
		put(gg("ffn_down.weight"), get(hf("output.dense.weight"), D, F))
		put(gg("ffn_down.bias"), get(hf("output.dense.bias"), D))
		put(gg("layer_output_norm.weight"), get(hf("output.LayerNorm.weight"), D))
		put(gg("layer_output_norm.bias"), get(hf("output.LayerNorm.bias"), D))
	}
	if err != nil {
		return nil, err
	}
	// biases and norms are added to f32 activations: widen them
	for name, t := range w.Tensors {
		if len(t.Shape) == 1 && t.DType != loader.F32 {
			v, err := t.F32()
			if err != nil {
				return nil, err
			}
			w.Tensors[name] = f32Vector(name, v)
		}
	}
	return w, nil
}
