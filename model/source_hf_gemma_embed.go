package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"wasmllm/loader"
)

// hfGemmaEmbedConfig is the part of EmbeddingGemma's config.json
// (Gemma3TextModel, model_type gemma3_text) the encoder reads.
type hfGemmaEmbedConfig struct {
	Vocab          int      `json:"vocab_size"`
	Hidden         int      `json:"hidden_size"`
	Layers         int      `json:"num_hidden_layers"`
	Heads          int      `json:"num_attention_heads"`
	KVHeads        int      `json:"num_key_value_heads"`
	HeadDim        int      `json:"head_dim"`
	FFN            int      `json:"intermediate_size"`
	MaxPos         int      `json:"max_position_embeddings"`
	NormEps        float64  `json:"rms_norm_eps"`
	RopeTheta      float64  `json:"rope_theta"`
	RopeLocal      float64  `json:"rope_local_base_freq"`
	SlidingWindow  int      `json:"sliding_window"`
	Pattern        int      `json:"sliding_window_pattern"`
	LayerTypes     []string `json:"layer_types"`
	Activation     string   `json:"hidden_activation"`
	Bidirectional  *bool    `json:"use_bidirectional_attention"`
	FinalSoftcap   *float64 `json:"final_logit_softcapping"`
	AttnSoftcap    *float64 `json:"attn_logit_softcapping"`
	RopeScaling    any      `json:"rope_scaling"`
	QueryPreScalar *float64 `json:"query_pre_attn_scalar"`
}

// hfGemmaEmbedTensors are Gemma3TextModel's names of the encoder's
// tensors (GGUF's names on the left, as llama.cpp's converter maps them;
// the folder holds the bare model: no "model." prefix). Per-layer names
// take the layer index.
var hfGemmaEmbedTensors = map[string]string{
	"token_embd.weight":                 "embed_tokens.weight",
	"output_norm.weight":                "norm.weight",
	"blk.%d.attn_norm.weight":           "layers.%d.input_layernorm.weight",
	"blk.%d.attn_q.weight":              "layers.%d.self_attn.q_proj.weight",
	"blk.%d.attn_k.weight":              "layers.%d.self_attn.k_proj.weight",
	"blk.%d.attn_v.weight":              "layers.%d.self_attn.v_proj.weight",
	"blk.%d.attn_q_norm.weight":         "layers.%d.self_attn.q_norm.weight",
	"blk.%d.attn_k_norm.weight":         "layers.%d.self_attn.k_norm.weight",
	"blk.%d.attn_output.weight":         "layers.%d.self_attn.o_proj.weight",
	"blk.%d.post_attention_norm.weight": "layers.%d.post_attention_layernorm.weight",
	"blk.%d.ffn_norm.weight":            "layers.%d.pre_feedforward_layernorm.weight",
	"blk.%d.post_ffw_norm.weight":       "layers.%d.post_feedforward_layernorm.weight",
	"blk.%d.ffn_gate.weight":            "layers.%d.mlp.gate_proj.weight",
	"blk.%d.ffn_up.weight":              "layers.%d.mlp.up_proj.weight",
	"blk.%d.ffn_down.weight":            "layers.%d.mlp.down_proj.weight",
}

// gemmaEmbedFromHF reads a Hugging Face folder of EmbeddingGemma:
// config.json (gemma3_text), the trunk's safetensors, sentence-transformers'
// 1_Pooling (mean) and its Dense modules 2_Dense and 3_Dense
// (linear.weight, no bias) when present. Norm weights get Gemma's +1 here,
// as llama.cpp's converter adds it. What the gemma-embedding row cannot run
// (soft-caps, RoPE scaling, another activation, a layer pattern that is
// not periodic) is a *loader.FormatError naming the field.
func gemmaEmbedFromHF(dir, cfgPath string, data []byte) (*EncoderWeights, error) {
	ferr := func(file, field string, err error) error {
		return &loader.FormatError{File: file, Field: field, Offset: -1, Err: err}
	}
	var hc hfGemmaEmbedConfig
	if err := json.Unmarshal(data, &hc); err != nil {
		return nil, ferr(cfgPath, "", fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
	}
	unsupported := func(field string, v any) error {
		return ferr(cfgPath, field, fmt.Errorf("%w: %v", loader.ErrUnsupported, v))
	}
	switch {
	case hc.Activation != "" && hc.Activation != "gelu_pytorch_tanh":
		return nil, unsupported("hidden_activation", hc.Activation)
	case hc.Bidirectional != nil && !*hc.Bidirectional:
		return nil, unsupported("use_bidirectional_attention", false)
	case hc.FinalSoftcap != nil && *hc.FinalSoftcap != 0:
		return nil, unsupported("final_logit_softcapping", *hc.FinalSoftcap)
	case hc.AttnSoftcap != nil && *hc.AttnSoftcap != 0:
		return nil, unsupported("attn_logit_softcapping", *hc.AttnSoftcap)
	case hc.RopeScaling != nil:
		return nil, unsupported("rope_scaling", hc.RopeScaling)
	}
	c := EncoderConfig{Arch: ArchGemmaEmbedding, Vocab: hc.Vocab, Hidden: hc.Hidden, Layers: hc.Layers, Heads: hc.Heads,
		KVHeads: hc.KVHeads, HeadSize: hc.HeadDim, FFN: hc.FFN, MaxLen: hc.MaxPos, NormEps: hc.NormEps,
		RopeTheta: hc.RopeTheta, RopeLocalTheta: hc.RopeLocal, SlidingWindow: hc.SlidingWindow, SlidingPattern: hc.Pattern, Pooling: PoolMean}
	if c.NormEps == 0 {
		c.NormEps = 1e-6
	}
	if c.RopeLocalTheta == 0 {
		c.RopeLocalTheta = 10000
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if len(hc.LayerTypes) > 0 {
		// llama.cpp reads a period (6 unless the GGUF says): the list must be one
		for l, typ := range hc.LayerTypes {
			if (typ == "sliding_attention") != c.Local(l) && l < c.Layers {
				return nil, unsupported("layer_types", fmt.Sprintf("layer %d is %s, not the period-%d pattern", l, typ, max(c.SlidingPattern, 6)))
			}
		}
	}
	p, err := readHFPooling(filepath.Join(dir, "1_Pooling", "config.json"))
	if err != nil {
		return nil, err
	}
	if p != "" {
		c.Pooling = p
	}
	if err := c.Validate(); err != nil { // the sizes, before any tensor is read by them
		return nil, err
	}
	st, err := loader.OpenSafetensors(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	prefix := ""
	if st.Has("model.embed_tokens.weight") {
		prefix = "model."
	}
	w := &EncoderWeights{Tensors: map[string]*loader.Tensor{}, Source: dir}
	get := func(canon string, l int, shape ...int) *loader.Tensor {
		if err != nil {
			return nil
		}
		name := hfGemmaEmbedTensors[canon]
		if l >= 0 {
			name = fmt.Sprintf(name, l)
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
	// norm: the weight plus 1, in f32 (Gemma's RMSNorm scales by 1 + w)
	norm := func(to, canon string, l, n int) {
		t := get(canon, l, n)
		if err != nil {
			return
		}
		var v []float32
		if v, err = t.F32(); err == nil {
			for i := range v {
				v[i]++
			}
			w.Tensors[to] = f32Vector(to, v)
		}
	}
	put := func(to string, t *loader.Tensor) {
		if err == nil {
			w.Tensors[to] = t
		}
	}
	D, F, H, Hk, Dh := c.Hidden, c.FFN, c.Heads, c.KVHeads, c.HeadDim()
	put("token_embd.weight", get("token_embd.weight", -1, c.Vocab, D))
	norm("output_norm.weight", "output_norm.weight", -1, D)
	for l := 0; l < c.Layers && err == nil; l++ {
		gg := func(s string) string { return fmt.Sprintf(s, l) }
		q, k, v := get("blk.%d.attn_q.weight", l, H*Dh, D), get("blk.%d.attn_k.weight", l, Hk*Dh, D), get("blk.%d.attn_v.weight", l, Hk*Dh, D)
		if err == nil {
			var qkv *loader.Tensor
			qkv, err = concatRows(gg(NameEncQKV), q, k, v)
			put(gg(NameEncQKV), qkv)
		}
		put(gg("blk.%d.attn_output.weight"), get("blk.%d.attn_output.weight", l, D, H*Dh))
		for _, n := range []string{"blk.%d.attn_norm.weight", "blk.%d.post_attention_norm.weight", "blk.%d.ffn_norm.weight", "blk.%d.post_ffw_norm.weight"} {
			norm(gg(n), n, l, D)
		}
		norm(gg("blk.%d.attn_q_norm.weight"), "blk.%d.attn_q_norm.weight", l, Dh)
		norm(gg("blk.%d.attn_k_norm.weight"), "blk.%d.attn_k_norm.weight", l, Dh)
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
	if err := readDense(dir, w, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	w.Config = c
	return w, nil
}

// readDense reads sentence-transformers' 2_Dense and 3_Dense modules
// (linear.weight each, no bias) into dense_2 and dense_3; neither folder:
// no dense projections.
func readDense(dir string, w *EncoderWeights, c *EncoderConfig) error {
	var ts [2]*loader.Tensor
	for i, sub := range []string{"2_Dense", "3_Dense"} {
		p := filepath.Join(dir, sub)
		if _, err := os.Stat(p); err != nil {
			if i == 0 {
				return nil
			}
			return &loader.FormatError{File: p, Offset: -1, Err: fmt.Errorf("%w: 2_Dense without 3_Dense", loader.ErrNotFound)}
		}
		st, err := loader.OpenSafetensors(p)
		if err != nil {
			return err
		}
		if st.Has("linear.bias") {
			st.Close()
			return &loader.FormatError{File: p, Field: "tensor linear.bias", Offset: -1, Err: fmt.Errorf("%w: a Dense module with a bias", loader.ErrUnsupported)}
		}
		t, err := st.Tensor("linear.weight")
		st.Close()
		if err != nil {
			return err
		}
		ts[i] = t
	}
	D := c.Hidden
	if len(ts[0].Shape) != 2 || ts[0].Shape[1] != D || !slices.Equal(ts[1].Shape, []int{D, ts[0].Shape[0]}) {
		return &loader.FormatError{File: dir, Field: "tensor 2_Dense/3_Dense linear.weight", Offset: -1,
			Err: fmt.Errorf("%w: shapes %v and %v for hidden %d", loader.ErrCorrupt, ts[0].Shape, ts[1].Shape, D)}
	}
	c.DenseDim = ts[0].Shape[0]
	w.Tensors[NameDense2], w.Tensors[NameDense3] = ts[0], ts[1]
	return nil
}
