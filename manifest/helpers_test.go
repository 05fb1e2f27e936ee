package manifest

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"wasmllm/loader"
	"wasmllm/model"
)

// configFor returns a valid config of the given architecture (the tiny
// test models' hyperparameters).
func configFor(arch string) model.Config {
	c := model.Config{Arch: arch, Vocab: 512, Hidden: 128, Layers: 4, Heads: 8, KVHeads: 2, HeadDim: 16,
		FFN: 384, RMSEps: 1e-5, RopeTheta: 5e5, MaxContext: 131072}
	switch arch {
	case model.ArchQwen3:
		c.HeadDim, c.QKNorm, c.TiedEmbeddings, c.RopeTheta = 32, true, true, 1e6
	case model.ArchQwen3MoE:
		c.Hidden, c.Layers, c.Heads, c.HeadDim, c.FFN = 64, 2, 4, 32, 0
		c.Experts, c.ExpertsUsed, c.ExpertFFN, c.NormTopK, c.QKNorm, c.RopeTheta = 128, 8, 32, true, true, 1e7
	}
	return c
}

// f32Tensor is an F32 tensor of n elements whose values encode seed and
// index, so misplaced bytes show.
func f32Tensor(name string, seed, n int) *loader.Tensor {
	data := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(seed)*1000+float32(i)))
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{n}, Data: data}
}

// writeModel writes tensors into dir with the given shard size and returns
// the manifest Close filled in.
func writeModel(t *testing.T, dir string, shardBytes int64, tensors ...*loader.Tensor) *Manifest {
	t.Helper()
	w, err := NewWriter(dir, shardBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, x := range tensors {
		if err := w.Add(x); err != nil {
			t.Fatal(err)
		}
	}
	m := &Manifest{Arch: model.ArchLlama, Config: configFor(model.ArchLlama), Quant: "keep"}
	if err := w.Close(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// listDir returns the names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func testdata(name string) string { return filepath.Join("..", "testdata", "models", name) }
