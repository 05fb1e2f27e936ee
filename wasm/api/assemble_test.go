package api

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
)

// TestResidentUpload: tensors taken by Assembler.Upload leave only shared
// zero placeholders in the weights, and a model built through Resident
// from them generates the golden story.
func TestResidentUpload(t *testing.T) {
	dir := converted(t, "stories260K.gguf")
	data, err := os.ReadFile(filepath.Join(dir, manifest.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	b := cpu.New(1)
	resident := map[string]model.Tensor{}
	a := NewAssembler(m, dir)
	var shard []byte
	a.Upload = func(ti *manifest.TensorInfo) (bool, error) {
		d, _ := ti.Type()
		x, err := b.Upload(&loader.Tensor{Name: ti.Name, DType: d, Shape: ti.Shape, Data: shard[ti.Offset : ti.Offset+ti.Bytes]})
		resident[ti.Name] = x
		return err == nil, err
	}
	for i := range m.Shards {
		if shard, err = os.ReadFile(filepath.Join(dir, m.Shards[i].File)); err != nil {
			t.Fatal(err)
		}
		if err := a.AddShard(i, int64(len(shard)), func(dst []byte, off int64) { copy(dst, shard[off:]) }); err != nil {
			t.Fatal(err)
		}
	}
	w, err := a.Weights()
	if err != nil {
		t.Fatal(err)
	}
	if len(resident) != len(m.Tensors) {
		t.Fatalf("%d of %d tensors resident", len(resident), len(m.Tensors))
	}
	var base *byte
	for name := range resident {
		p := w.Tensors[name].Data
		for _, c := range p {
			if c != 0 {
				t.Fatalf("placeholder of %s is not zero", name)
			}
		}
		if base == nil {
			base = &p[0]
		} else if &p[0] != base {
			t.Errorf("placeholder of %s has its own memory", name)
		}
	}
	if _, ok := resident[model.NameRopeFreqs]; ok {
		t.Error("rope_freqs went resident")
	}
	mdl, err := model.Build(&Resident{Backend: b, Tensors: resident}, w)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(mdl, nil, engine.Options{Context: 256})
	if err != nil {
		t.Fatal(err)
	}
	p := greedyParams(64)
	res, err := e.Generate(context.Background(), &engine.Request{Tokens: []int32{1, 403, 407, 261, 378}, Params: p}, func(engine.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := goldenStory(t)
	for i := range want {
		if i >= len(res.Tokens) || res.Tokens[i] != want[i] {
			t.Fatalf("tokens %v\nwant %v", res.Tokens, want)
		}
	}
}
