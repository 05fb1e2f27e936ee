package api

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
)

// TestResidentUpload: tensors taken by Assembler.Upload leave no bytes in
// the weights, and a model built from them generates the golden story.
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
	a.Upload = func(ti *manifest.TensorInfo) (model.Tensor, error) {
		d, _ := ti.Type()
		x, err := b.Upload(&loader.Tensor{Name: ti.Name, DType: d, Shape: ti.Shape, Data: bytes.Clone(shard[ti.Offset : ti.Offset+ti.Bytes])})
		resident[ti.Name] = x
		return x, err
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
	for name := range resident {
		if w.Tensors[name].Data != nil {
			t.Errorf("resident %s kept its bytes in Go", name)
		}
	}
	if _, ok := resident[model.NameRopeFreqs]; ok {
		t.Error("rope_freqs went resident")
	}
	mdl, err := model.Build(b, w)
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

// TestBuildTokenizerChecksum: tokenizer bytes that do not match the
// manifest's sha256 are refused with code integrity, naming the file.
func TestBuildTokenizerChecksum(t *testing.T) {
	dir := "../../models/stories260K"
	data, err := os.ReadFile(filepath.Join(dir, manifest.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "tokenizer.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildTokenizer(m, map[string][]byte{"tokenizer.gguf": tok}); err != nil {
		t.Fatalf("the real file: %v", err)
	}
	tok[100] ^= 1
	_, err = BuildTokenizer(m, map[string][]byte{"tokenizer.gguf": tok})
	if e := Classify(err); e.Code != CodeIntegrity || !strings.Contains(e.Message, "tokenizer.gguf") {
		t.Errorf("got %v (%s), want integrity naming tokenizer.gguf", err, e.Code)
	}
}
