package model_test

import (
	"fmt"
	"testing"

	"wasmllm/loader"
	"wasmllm/model"
)

// TestStackedMerges loads the vendored K-quant files, llama-quantize's
// real mixes: every layer's q/k/v has Q3_K (Q3_K_M) or Q2_K (Q2_K) q and k
// rows and a v of the next type up, so attn_qkv is two row blocks in
// their own types (no F32), while gate and up share a type and merge into
// one. TestGoldenCPUKQuantQwen2 and gpu.TestKQuantGolden run these
// stacks against the goldens.
func TestStackedMerges(t *testing.T) {
	for _, c := range []struct {
		file       string
		qk, v, ffn loader.DType
	}{
		{"k-llama3-q3_k_m", loader.Q3_K, loader.Q5_K, loader.Q3_K},
		{"k-qwen3-q2_k", loader.Q2_K, loader.Q3_K, loader.Q2_K},
	} {
		w := loadWeights(t, "../testdata/k/models/"+c.file+".gguf")
		cf := w.Config
		for l := range cf.Layers {
			qkv := w.Tensors[fmt.Sprintf(model.NameQKV, l)]
			if qkv.DType != loader.Mixed || len(qkv.Stack) != 2 {
				t.Fatalf("%s layer %d: attn_qkv %s, want two row blocks", c.file, l, qkv.DType)
			}
			qk, v := qkv.Stack[0], qkv.Stack[1]
			if qk.DType != c.qk || v.DType != c.v || qk.Rows() != (cf.Heads+cf.KVHeads)*cf.HeadDim || v.Rows() != cf.KVHeads*cf.HeadDim {
				t.Errorf("%s layer %d: blocks %s %v and %s %v, want %s q+k and %s v", c.file, l, qk.DType, qk.Shape, v.DType, v.Shape, c.qk, c.v)
			}
			if gu := w.Tensors[fmt.Sprintf(model.NameGateUp, l)]; gu.DType != c.ffn {
				t.Errorf("%s layer %d: ffn_gate_up %s, want %s", c.file, l, gu.DType, c.ffn)
			}
			n, _ := qkv.Size()
			q, _ := qk.Size()
			vb, _ := v.Size()
			if n != q+vb {
				t.Errorf("%s layer %d: %d bytes, the blocks %d", c.file, l, n, q+vb)
			}
		}
	}
}
