package loading_test

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"testing"

	"wasmllm/convert"
	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/source"
	"wasmllm/wasm/loading"
)

// TestAssembleStacked assembles a converted Q3_K_M file, whose q/k/v are
// stacked (Q3_K and Q5_K row blocks): the blocks go to the backend
// straight from their shard by their own names, the stacked tensor is a
// loader.Mixed of them, the plan counts each block's bytes once, and the
// model gives the very logits of the folder read natively.
func TestAssembleStacked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "k")
	if _, err := convert.Convert(context.Background(), convert.Options{In: "../../testdata/k/models/k-llama3-q3_k_m.gguf", Out: dir, Quant: "keep", Workers: 2}); err != nil {
		t.Fatal(err)
	}
	m := readManifest(t, dir)
	var blocks int64
	stacks := 0
	for _, ti := range m.Tensors {
		if len(ti.Stack) > 0 {
			stacks++
			blocks += ti.Bytes
		}
	}
	if stacks != 2 {
		t.Fatalf("%d stacked tensors, want the two layers' q/k/v", stacks)
	}
	plan, err := loading.Check(m, loading.Limits{Backend: loading.BackendCPU}, 64)
	if err != nil {
		t.Fatal(err)
	}
	if plan.WeightBytes >= m.TotalBytes()+blocks/2 {
		t.Errorf("the plan counts %d weight bytes for %d bytes of shards: the stacks counted twice?", plan.WeightBytes, m.TotalBytes())
	}
	b := cpu.New(1)
	resident := map[string]model.Tensor{}
	a := loading.NewAssembler(m, dir)
	var shard []byte
	a.Upload = func(ti *manifest.TensorInfo) (model.Tensor, error) {
		d, _ := ti.Type()
		x, err := b.Upload(&loader.Tensor{Name: ti.Name, DType: d, Shape: ti.Shape, Data: bytes.Clone(shard[ti.Offset : ti.Offset+ti.Bytes])})
		resident[ti.Name] = x
		return x, err
	}
	for i := range m.Shards {
		shard = readShard(t, dir, m, i)
		if err := a.AddShard(i, int64(len(shard)), func(dst []byte, off int64) { copy(dst, shard[off:]) }); err != nil {
			t.Fatal(err)
		}
	}
	w, err := a.Weights()
	if err != nil {
		t.Fatal(err)
	}
	qkv := w.Tensors["blk.0.attn_qkv.weight"]
	if qkv.DType != loader.Mixed || len(qkv.Stack) != 2 || resident[qkv.Stack[0].Name] == nil || resident[qkv.Stack[1].Name] == nil {
		t.Fatalf("assembled attn_qkv %s with %d blocks; want a stack of two resident blocks", qkv.DType, len(qkv.Stack))
	}
	if _, ok := w.Tensors[model.StackPartName("blk.0.attn_qkv.weight", 0)]; ok {
		t.Error("a row block is left in the weights under its own name")
	}
	native, _, err := source.Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	got, want := logits(t, b, w), logits(t, cpu.New(1), native)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d: assembled %v, read natively %v", i, got[i], want[i])
		}
	}
}

// logits runs four tokens through w on b in one batch.
func logits(t *testing.T, b model.Backend, w *model.Weights) []float32 {
	t.Helper()
	m, err := model.Build(b, w)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int32{1, 100, 200, 300}
	cache, _ := m.NewCache(len(ids))
	out, err := m.Forward(cache, ids, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	f := make([]float32, len(ids)*m.Config.Vocab)
	if err := b.ReadF32(out, f); err != nil {
		t.Fatal(err)
	}
	return f
}
