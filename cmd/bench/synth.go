package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"wasmllm/loader"
)

// synthShape is a Llama model's shape; llama32_1B is Llama-3.2-1B's.
type synthShape struct {
	Layers, Hidden, Heads, KVHeads, HeadDim, FFN, Vocab int
}

var llama32_1B = synthShape{Layers: 16, Hidden: 2048, Heads: 32, KVHeads: 8, HeadDim: 64, FFN: 8192, Vocab: 128256}

// writeSynthetic writes a GGUF model of shape s with random Q4_0 weights
// (every matrix, the tied embedding too) and F32 norms. Its tokenizer is
// base's byte-level BPE vocabulary (a tiny Llama-3-style GGUF) padded to
// s.Vocab with plain filler tokens that no text encodes to, so both engines
// tokenize a prompt as base does.
func writeSynthetic(path, base string, s synthShape) error {
	g, err := loader.OpenGGUF(base)
	if err != nil {
		return err
	}
	defer g.Close()
	var meta []loader.MetaKV
	for _, kv := range g.MetaKVs() {
		switch {
		case kv.Key == "tokenizer.ggml.tokens":
			toks, ok := kv.Value.([]string)
			if !ok || len(toks) > s.Vocab {
				return fmt.Errorf("%s: tokenizer.ggml.tokens is %T of %d", base, kv.Value, len(toks))
			}
			have := make(map[string]bool, len(toks))
			for _, t := range toks {
				have[t] = true
			}
			out := append([]string(nil), toks...)
			for i := len(toks); i < s.Vocab; i++ {
				t := fmt.Sprintf("[filler%06d]", i)
				if have[t] {
					return fmt.Errorf("%s: filler token %q is in the vocabulary", base, t)
				}
				out = append(out, t)
			}
			meta = append(meta, loader.MetaKV{Key: kv.Key, Value: out})
		case kv.Key == "tokenizer.ggml.token_type":
			types, ok := kv.Value.([]int32)
			if !ok {
				return fmt.Errorf("%s: tokenizer.ggml.token_type is %T", base, kv.Value)
			}
			out := append([]int32(nil), types...)
			for len(out) < s.Vocab {
				out = append(out, 1) // normal
			}
			meta = append(meta, loader.MetaKV{Key: kv.Key, Value: out})
		case strings.HasPrefix(kv.Key, "tokenizer."), kv.Key == "general.alignment":
			meta = append(meta, kv)
		}
	}
	u := func(v int) uint32 { return uint32(v) }
	meta = append([]loader.MetaKV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.name", Value: fmt.Sprintf("synthetic Llama-3.2-1B shape, %d layers, random q4", s.Layers)},
		{Key: "general.file_type", Value: uint32(2)}, // MOSTLY_Q4_0
		{Key: "general.quantization_version", Value: uint32(2)},
		{Key: "llama.block_count", Value: u(s.Layers)},
		{Key: "llama.context_length", Value: uint32(8192)},
		{Key: "llama.embedding_length", Value: u(s.Hidden)},
		{Key: "llama.feed_forward_length", Value: u(s.FFN)},
		{Key: "llama.attention.head_count", Value: u(s.Heads)},
		{Key: "llama.attention.head_count_kv", Value: u(s.KVHeads)},
		{Key: "llama.attention.key_length", Value: u(s.HeadDim)},
		{Key: "llama.attention.value_length", Value: u(s.HeadDim)},
		{Key: "llama.rope.dimension_count", Value: u(s.HeadDim)},
		{Key: "llama.rope.freq_base", Value: float32(500000)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
		{Key: "llama.vocab_size", Value: u(s.Vocab)},
	}, meta...)

	rng := rand.New(rand.NewPCG(1, uint64(s.Layers)))
	D, Q, KV, F := s.Hidden, s.Heads*s.HeadDim, s.KVHeads*s.HeadDim, s.FFN
	tensors := []*loader.Tensor{q4Random(rng, "token_embd.weight", s.Vocab, D), ones("output_norm.weight", D)}
	for l := range s.Layers {
		n := func(f string) string { return fmt.Sprintf("blk.%d.%s.weight", l, f) }
		tensors = append(tensors,
			ones(n("attn_norm"), D),
			q4Random(rng, n("attn_q"), Q, D),
			q4Random(rng, n("attn_k"), KV, D),
			q4Random(rng, n("attn_v"), KV, D),
			q4Random(rng, n("attn_output"), D, Q),
			ones(n("ffn_norm"), D),
			q4Random(rng, n("ffn_gate"), F, D),
			q4Random(rng, n("ffn_up"), F, D),
			q4Random(rng, n("ffn_down"), D, F))
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := loader.WriteGGUF(w, 3, meta, tensors); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// q4Random is a (rows, cols) Q4_0 tensor of random nibbles whose scales
// keep each output near unit size.
func q4Random(rng *rand.Rand, name string, rows, cols int) *loader.Tensor {
	blocks := rows * cols / 32
	data := make([]byte, blocks*18)
	for i := 0; i+8 <= len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
	}
	// (q-8) has a standard deviation of about 4.6.
	scale := float32(1 / (4.6 * math.Sqrt(float64(cols))))
	for b := range blocks {
		binary.LittleEndian.PutUint16(data[18*b:], loader.F32ToF16(scale*(0.75+0.5*rng.Float32())))
	}
	return &loader.Tensor{Name: name, DType: loader.Q4_0, Shape: []int{rows, cols}, Data: data}
}

func ones(name string, n int) *loader.Tensor {
	data := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(1))
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{n}, Data: data}
}
