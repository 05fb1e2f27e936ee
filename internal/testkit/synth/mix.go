package synth

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"wasmllm/loader"
)

// MixQ4KM is llama-quantize's Q4_K_M mix (llama.cpp's
// llama_tensor_get_type, no imatrix): Q4_K matrices, but attn_v and
// ffn_down Q6_K on the "more bits" layers (use_more_bits: the first and
// last eighth of the layers and every third between), and the output
// head Q6_K (the token embedding when it is tied).
const MixQ4KM = "Q4_K_M"

// Llama32_1B_Q4KM is Llama32_1B in the Q4_K_M mix, the file most people
// download of it.
var Llama32_1B_Q4KM = func() Shape {
	s := Llama32_1B
	s.DType, s.Mix = loader.Q4_K, MixQ4KM
	return s
}()

// useMoreBits is llama.cpp's use_more_bits(i, n).
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// q4KMType is the Q4_K_M mix's type for the matrix name in a model of
// layers layers (tied: the token embedding is the head).
func q4KMType(name string, layers int, tied bool) loader.DType {
	switch {
	case name == "output.weight", tied && name == "token_embd.weight":
		return loader.Q6_K
	case strings.HasSuffix(name, ".attn_v.weight"), strings.HasSuffix(name, ".ffn_down.weight"):
		var l int
		if _, err := fmt.Sscanf(name, "blk.%d.", &l); err == nil && useMoreBits(l, layers) {
			return loader.Q6_K
		}
	}
	return loader.Q4_K
}

// kScales are the byte offsets of a K-quant block's f16 super-block scales
// (d, and dmin where the type has one).
var kScales = map[loader.DType][]int{loader.Q2_K: {80, 82}, loader.Q3_K: {108}, loader.Q4_K: {0, 2}, loader.Q5_K: {0, 2}, loader.Q6_K: {208}}

// randomK is a K-quant matrix of random blocks (every quant and sub-block
// scale pattern) whose f16 scales keep each output near unit size: the
// blocks' spread at unit scales is measured, then each block's scales
// set to 1/(spread·sqrt(cols)), jittered.
func randomK(rng *rand.Rand, dt loader.DType, name string, shape ...int) *loader.Tensor {
	n, cols := 1, shape[len(shape)-1]
	for _, x := range shape {
		n *= x
	}
	bb, blocks := dt.BlockBytes(), n/256
	data := make([]byte, blocks*bb)
	for i := 0; i+8 <= len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
	}
	one := loader.F32ToF16(1)
	sample := min(blocks, 64)
	for b := range sample {
		for _, off := range kScales[dt] {
			binary.LittleEndian.PutUint16(data[b*bb+off:], one)
		}
	}
	vals := make([]float32, sample*256)
	spread := 1.0
	if err := loader.Dequantize(dt, data[:sample*bb], vals); err == nil {
		var sum, sq float64
		for _, v := range vals {
			sum += float64(v)
			sq += float64(v) * float64(v)
		}
		mean := sum / float64(len(vals))
		spread = math.Sqrt(max(sq/float64(len(vals))-mean*mean, 1e-12))
	}
	scale := 1 / (spread * math.Sqrt(float64(cols)))
	for b := range blocks {
		h := loader.F32ToF16(float32(scale * (0.75 + 0.5*rng.Float64())))
		for _, off := range kScales[dt] {
			binary.LittleEndian.PutUint16(data[b*bb+off:], h)
		}
	}
	return &loader.Tensor{Name: name, DType: dt, Shape: shape, Data: data}
}
