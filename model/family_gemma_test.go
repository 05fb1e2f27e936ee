package model

import (
	"math"
	"testing"

	"wasmllm/loader"
)

// TestGemma3QNorm: a 62-layer gemma3 (27B) has its q norm weight scaled by
// sqrt(Dh/(D/H)), so that Attend's 1/sqrt(Dh) gives llama.cpp's
// 1/sqrt(D/H); other sizes keep the stored weight.
func TestGemma3QNorm(t *testing.T) {
	w := []float32{1, 2, -0.5}
	q := &loader.Tensor{Name: "blk.0.attn_q_norm.weight", DType: loader.F32, Shape: []int{3}, Data: f32Bytes(w)}
	c := Config{Layers: 62, Heads: 32, Hidden: 5376, HeadDim: 128}
	got, err := gemma3QNorm(&c, NameQNorm, []*loader.Tensor{q})
	if err != nil {
		t.Fatal(err)
	}
	v, err := got.F32()
	if err != nil {
		t.Fatal(err)
	}
	f := math.Sqrt(128.0 / 168)
	for i := range w {
		if math.Abs(float64(v[i])-float64(w[i])*f) > 1e-6 {
			t.Errorf("27B: value %d is %v, want %v", i, v[i], float64(w[i])*f)
		}
	}
	// With the scale: (q·k)·1/sqrt(Dh) after the fold equals the 27B's
	// (q·k)·1/sqrt(D/H) before it.
	if s := f / math.Sqrt(128); math.Abs(s-1/math.Sqrt(168)) > 1e-12 {
		t.Errorf("effective scale %v, want %v", s, 1/math.Sqrt(168))
	}
	c.Layers = 26 // 1B
	same, err := gemma3QNorm(&c, NameQNorm, []*loader.Tensor{q})
	if err != nil || same != q {
		t.Errorf("1B: %v, %v; want the stored tensor", same, err)
	}
}
