package main

import (
	"fmt"
	"os"
	"path/filepath"

	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/loader"
	"wasmllm/model"
)

// KVReport is the KV cache's types, measured natively: stories260K's
// teacher-forced perplexity over held-out text filling its context with
// each type (engine.EvalPerplexity; TestPerplexityKV checks the bound in
// CI), and the bytes of a cache at 32k tokens for published shapes.
type KVReport struct {
	Text       string             `json:"text"`   // the held-out text's path in the repository
	Tokens     int                `json:"tokens"` // ids read, BOS first
	Perplexity map[string]float64 `json:"perplexity"`
	Bytes32k   []KVShape          `json:"bytes_32k"`
}

// KVShape is a model's KV cache at 32768 tokens in each type.
type KVShape struct {
	Name    string           `json:"name"`
	Layers  int              `json:"layers"`
	KVHeads int              `json:"kv_heads"`
	HeadDim int              `json:"head_dim"`
	Bytes   map[string]int64 `json:"bytes"` // by type name: K and V of every layer
}

// kvTypes are the cache types the report measures.
var kvTypes = []loader.DType{loader.F32, loader.F16, model.KVQ8}

// kvShapes are published models' attention shapes (their config.json).
var kvShapes = []KVShape{
	{Name: "Llama-3.1-8B", Layers: 32, KVHeads: 8, HeadDim: 128},
	{Name: "Mistral-7B", Layers: 32, KVHeads: 8, HeadDim: 128},
	{Name: "Qwen3-0.6B", Layers: 28, KVHeads: 8, HeadDim: 128},
}

// heldoutText is the perplexity's text, written for the repository
// (testdata/perplexity/README.md).
const heldoutText = "testdata/perplexity/heldout.txt"

// measureKV fills a KVReport from the repository at root.
func measureKV(root string) (*KVReport, error) {
	rep := &KVReport{Text: heldoutText, Perplexity: map[string]float64{}}
	for _, s := range kvShapes {
		s.Bytes = map[string]int64{}
		for _, dt := range kvTypes {
			s.Bytes[model.KVDTypeName(dt)] = 2 * int64(s.Layers) * 32768 * model.KVRowBytes(dt, s.KVHeads, s.HeadDim)
		}
		rep.Bytes32k = append(rep.Bytes32k, s)
	}
	const ctx = 512 // stories260K's context
	e, err := engine.Load(filepath.Join(root, "models", "stories260K"), cpu.New(0), engine.LoadOptions{Options: engine.Options{Context: ctx}})
	if err != nil {
		return nil, err
	}
	text, err := os.ReadFile(filepath.Join(root, heldoutText))
	if err != nil {
		return nil, err
	}
	ids, err := e.Tok.Encode(string(text), true)
	if err != nil {
		return nil, err
	}
	if len(ids) < ctx {
		return nil, fmt.Errorf("bench: %s is %d tokens, not %d", heldoutText, len(ids), ctx)
	}
	ids = ids[:ctx]
	rep.Tokens = len(ids)
	for _, dt := range kvTypes {
		p, err := engine.EvalPerplexity(e.Model, dt, ids, 128)
		if err != nil {
			return nil, err
		}
		rep.Perplexity[model.KVDTypeName(dt)] = p.PPL
	}
	return rep, nil
}

// kvRatios are the report's KV ratio lines: each type's perplexity over
// f32's, and each shape's q8 bytes over f16's.
func (r *Report) kvRatios() {
	k := r.KV
	if k == nil || k.Perplexity["f32"] <= 0 {
		return
	}
	for _, name := range []string{"q8", "f16"} {
		if v := k.Perplexity[name]; v > 0 {
			r.Ratios = append(r.Ratios, Ratio{"perplexity_" + name + "_vs_f32", v / k.Perplexity["f32"]})
		}
	}
	for _, s := range k.Bytes32k {
		if f16 := s.Bytes["f16"]; f16 > 0 {
			r.Ratios = append(r.Ratios, Ratio{"kv_bytes_q8_vs_f16_" + ratioName(s.Name), float64(s.Bytes["q8"]) / float64(f16)})
		}
	}
}
