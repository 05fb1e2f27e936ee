package model_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// randomEncoder is a bert of bge-small-en-v1.5's shapes (H 384, 12 layers,
// 12 heads, FFN 1536, 512 positions, vocab 30522) with random F32 weights.
func randomEncoder(b testing.TB) *model.Encoder {
	r := rand.New(rand.NewPCG(1, 2))
	c := model.EncoderConfig{Arch: model.ArchBert, Vocab: 30522, Hidden: 384, Layers: 12, Heads: 12, FFN: 1536,
		MaxLen: 512, NormEps: 1e-12, TokenTypes: 2, Pooling: model.PoolCLS}
	w := &model.EncoderWeights{Config: c, Tensors: map[string]*loader.Tensor{}, Source: "random"}
	add := func(name string, scale float64, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			v := math.Float32bits(float32(r.NormFloat64() * scale))
			data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		}
		w.Tensors[name] = &loader.Tensor{Name: name, DType: loader.F32, Shape: shape, Data: data}
	}
	D, F := c.Hidden, c.FFN
	add("token_embd.weight", 1, c.Vocab, D)
	add("position_embd.weight", 1, c.MaxLen, D)
	add(model.NameTokenType0, 1, D)
	add("token_embd_norm.weight", 0.1, D)
	add("token_embd_norm.bias", 0.1, D)
	for l := 0; l < c.Layers; l++ {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		add(fmt.Sprintf(model.NameEncQKV, l), 1/math.Sqrt(float64(D)), 3*D, D)
		add(fmt.Sprintf(model.NameEncQKVBias, l), 0.1, 3*D)
		add(n("attn_output.weight"), 1/math.Sqrt(float64(D)), D, D)
		add(n("attn_output.bias"), 0.1, D)
		add(n("attn_output_norm.weight"), 0.1, D)
		add(n("attn_output_norm.bias"), 0.1, D)
		add(n("ffn_up.weight"), 1/math.Sqrt(float64(D)), F, D)
		add(n("ffn_up.bias"), 0.1, F)
		add(n("ffn_down.weight"), 1/math.Sqrt(float64(F)), D, F)
		add(n("ffn_down.bias"), 0.1, D)
		add(n("layer_output_norm.weight"), 0.1, D)
		add(n("layer_output_norm.bias"), 0.1, D)
	}
	e, err := model.BuildEncoder(cpu.New(0), w)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkEncoderBGESmall embeds batches of 64 inputs of 128 tokens with
// a bge-small-shaped bert on the CPU backend (F32 weights): it reports
// embeddings per second and the multiply-add rate.
func BenchmarkEncoderBGESmall(b *testing.B) {
	e := randomEncoder(b)
	const n, T = 64, 128
	seqs := make([][]int32, n)
	for i := range seqs {
		seqs[i] = make([]int32, T)
		for j := range seqs[i] {
			seqs[i][j] = int32((i*T + j*7919) % 30522)
		}
	}
	// multiply-adds per token: the projections (4D² + 2DF per layer) and
	// attention (2·T·D per layer)
	c := e.Config
	macs := float64(n*T) * float64(c.Layers) * (4*float64(c.Hidden*c.Hidden) + 2*float64(c.Hidden*c.FFN) + 2*float64(T*c.Hidden))
	b.ResetTimer()
	for range b.N {
		if _, err := e.Embed(seqs); err != nil {
			b.Fatal(err)
		}
	}
	s := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(n)/s, "embeddings/s")
	b.ReportMetric(macs/s/1e9, "GMAC/s")
}

// BenchmarkDecoderEmbed embeds 16 inputs of 8 to 68 tokens with the
// vendored tiny Qwen3-Embedding on the CPU backend, as one pass
// (batch) and one input at a time through Forward (sequential).
func BenchmarkDecoderEmbed(b *testing.B) {
	g, err := loader.ReadGGUF("../testdata/embed/models/tiny-qwen3-embed-q4_0.gguf")
	if err != nil {
		b.Fatal(err)
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		b.Fatal(err)
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		b.Fatal(err)
	}
	seqs := make([][]int32, 16)
	for i := range seqs {
		seqs[i] = make([]int32, 8+4*i)
		for j := range seqs[i] {
			seqs[i][j] = int32((i*131 + j*17) % 509)
		}
	}
	for _, sequential := range []bool{false, true} {
		name := "batch"
		if sequential {
			name = "sequential"
		}
		b.Run(name, func(b *testing.B) {
			d := &model.DecoderEmbedder{M: m, Pooling: model.PoolLast, Sequential: sequential}
			for range b.N {
				if _, err := d.Embed(seqs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(seqs))*float64(b.N)/b.Elapsed().Seconds(), "embeddings/s")
		})
	}
}
