//go:build js

package main

import (
	"fmt"
	"math"

	"wasmllm/loader"
	"wasmllm/model"
)

// The text-embedding rows: the encoder's bidirectional attention kernel,
// and a whole batch through a bge-small-shaped bert (issue 38's
// throughput: embeddings per second as a fraction of the FMA probe).

// attendSeq times AttendSeq on S sequences of L tokens, H heads of Dh.
func (k *kernelBench) attendSeq(name string, S, L, H, Dh int) error {
	T := S * L
	seq := make([]int32, T)
	for i := range seq {
		seq[i] = int32(i / L)
	}
	qkv, out, st := k.input(T, 3*H*Dh), k.be.NewF32(T, H*Dh), k.be.NewI32(T)
	defer k.free(qkv, out, st)
	k.be.WriteI32(st, seq)
	flops := float64(S*H) * 4 * float64(L) * float64(L) * float64(Dh) // Q·Kᵀ and P·V
	return k.compute(name, fmt.Sprintf("S=%d L=%d H=%d Dh=%d", S, L, H, Dh), flops, func() { k.be.AttendSeq(out, qkv, st, H, H, Dh, 0, false) })
}

// encoder times Encoder.Embed of S inputs of L tokens through a bert of
// hidden D, layers, D/32 heads and ffn 4D, its matrices of type dt (a
// bge-small is D 384, 12 layers): rate is GFLOP/s of the whole batch (its
// matmuls and attention), and the log line gives embeddings per second.
func (k *kernelBench) encoder(name string, dt loader.DType, S, L, D, layers int) error {
	F := 4 * D
	c := model.EncoderConfig{Arch: model.ArchBert, Vocab: 30522, Hidden: D, Layers: layers, Heads: D / 32, FFN: F,
		MaxLen: 512, NormEps: 1e-12, TokenTypes: 2, Pooling: model.PoolCLS}
	w := &model.EncoderWeights{Config: c, Tensors: map[string]*loader.Tensor{}, Source: "bench"}
	vec := func(name string, n int, base float32) {
		v := make([]float32, n)
		for i := range v {
			v[i] = base + 0.1*(k.rng.Float32()*2-1)
		}
		w.Tensors[name] = f32Tensor(name, v, n)
	}
	mat := func(name string, dt loader.DType, N, K int) error {
		t, err := randomWeight(k, name, dt, N, K)
		if err != nil {
			return err
		}
		w.Tensors[name] = t
		return nil
	}
	if err := mat("token_embd.weight", loader.F32, c.Vocab, D); err != nil {
		return err
	}
	if err := mat("position_embd.weight", loader.F32, c.MaxLen, D); err != nil {
		return err
	}
	vec(model.NameTokenType0, D, 0)
	vec("token_embd_norm.weight", D, 1)
	vec("token_embd_norm.bias", D, 0)
	for l := range layers {
		n := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		for _, m := range []struct {
			name string
			N, K int
		}{{fmt.Sprintf(model.NameEncQKV, l), 3 * D, D}, {n("attn_output.weight"), D, D}, {n("ffn_up.weight"), F, D}, {n("ffn_down.weight"), D, F}} {
			if err := mat(m.name, dt, m.N, m.K); err != nil {
				return err
			}
		}
		vec(fmt.Sprintf(model.NameEncQKVBias, l), 3*D, 0)
		vec(n("attn_output.bias"), D, 0)
		vec(n("ffn_up.bias"), F, 0)
		vec(n("ffn_down.bias"), D, 0)
		for _, s := range []string{"attn_output_norm", "layer_output_norm"} {
			vec(n(s+".weight"), D, 1)
			vec(n(s+".bias"), D, 0)
		}
	}
	enc, err := model.BuildEncoder(k.be, w)
	if err != nil {
		return err
	}
	seqs := make([][]int32, S)
	for i := range seqs {
		seqs[i] = make([]int32, L)
		for j := range seqs[i] {
			seqs[i][j] = int32(k.rng.IntN(c.Vocab))
		}
	}
	T := float64(S * L)
	flops := 2 * T * float64(layers) * (4*float64(D*D) + 2*float64(D*F) + 2*float64(L*D))
	var embedErr error
	err = k.compute(name, fmt.Sprintf("%s S=%d L=%d D=%d layers=%d", dt, S, L, D, layers), flops, func() {
		if _, err := enc.Embed(seqs); err != nil && embedErr == nil {
			embedErr = err
		}
	})
	if err == nil {
		err = embedErr
	}
	if err == nil {
		last := k.out[len(k.out)-1]
		k.log("%s: %.1f embeddings/s (%d tokens each)", name, float64(S)/(last.Ms/1e3), L)
	}
	return err
}

// randomWeight is an (N, K) weight of type dt (F32, or a type
// loader.Quantize writes, such as Q8_0) with values of about 1/sqrt(K).
func randomWeight(k *kernelBench, name string, dt loader.DType, N, K int) (*loader.Tensor, error) {
	v := make([]float32, N*K)
	s := float32(1 / math.Sqrt(float64(K)))
	for i := range v {
		v[i] = (k.rng.Float32()*2 - 1) * s
	}
	if dt == loader.F32 {
		return f32Tensor(name, v, N, K), nil
	}
	data, err := loader.Quantize(dt, v)
	if err != nil {
		return nil, err
	}
	return &loader.Tensor{Name: name, DType: dt, Shape: []int{N, K}, Data: data}, nil
}

func f32Tensor(name string, v []float32, shape ...int) *loader.Tensor {
	data := make([]byte, 4*len(v))
	for i, f := range v {
		b := math.Float32bits(f)
		data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: shape, Data: data}
}
