package manifest

import (
	"fmt"
	"path/filepath"
	"testing"

	"wasmllm/loader"
)

const benchTensors, benchTensorBytes = 16, 1 << 20

func benchModel(b *testing.B, dir string) {
	w, err := NewWriter(dir, DefaultShardBytes)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Abort()
	data := make([]byte, benchTensorBytes)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for i := range benchTensors {
		t := &loader.Tensor{Name: fmt.Sprint("t", i), DType: loader.F32, Shape: []int{benchTensorBytes / 4}, Data: data}
		if err := w.Add(t); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(&Manifest{Arch: "llama", Config: configFor("llama")}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWriter measures writing 16 MiB (hashing, fsync, rename).
func BenchmarkWriter(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "m")
	b.SetBytes(benchTensors * benchTensorBytes)
	for b.Loop() {
		benchModel(b, dir)
	}
}

// BenchmarkOpen measures Open's shard verification (size + sha256) of 16 MiB.
func BenchmarkOpen(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "m")
	benchModel(b, dir)
	b.SetBytes(benchTensors * benchTensorBytes)
	for b.Loop() {
		if _, err := Open(dir); err != nil {
			b.Fatal(err)
		}
	}
}
