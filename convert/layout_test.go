package convert

import (
	"path/filepath"
	"reflect"
	"testing"

	"wasmllm/loader"
	"wasmllm/manifest"
)

// TestLayout: the manifest Layout predicts before reading a tensor has the
// tensors (name, type, shape, bytes) and config the conversion writes, for
// every quantisation mode, K-quant files included.
func TestLayout(t *testing.T) {
	inputs := []string{
		filepath.Join(testdata, "models", "tiny-llama3-q4_0.gguf"),
		filepath.Join(testdata, "models", "tiny-qwen3moe-q8_0.gguf"),
		filepath.Join(testdata, "models", "stories260K.gguf"),
	}
	k, _ := filepath.Glob(filepath.Join(testdata, "k", "models", "k-llama3-q3_k_m.gguf"))
	if len(k) == 0 {
		t.Fatal("no K-quant model in testdata/k/models")
	}
	inputs = append(inputs, k[0])
	for _, in := range inputs {
		for _, quant := range []string{quantKeep, quantQ4, quantF16} {
			src, err := Open(in, "")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Layout(src, quant)
			src.Close()
			if err != nil {
				t.Fatalf("%s %s: %v", in, quant, err)
			}
			dir, _ := convertTo(t, in, quant)
			want, err := manifest.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Tensors) != len(want.Tensors) || !reflect.DeepEqual(got.Config, want.Config) {
				t.Fatalf("%s %s: %d tensors, want %d (or the configs differ)", in, quant, len(got.Tensors), len(want.Tensors))
			}
			for i, g := range got.Tensors {
				w := want.Tensors[i]
				if g.Name != w.Name || g.DType != w.DType || !reflect.DeepEqual(g.Shape, w.Shape) || g.Bytes != w.Bytes {
					t.Errorf("%s %s: tensor %d is %s %s %v %d bytes, the conversion wrote %s %s %v %d", in, quant, i, g.Name, g.DType, g.Shape, g.Bytes, w.Name, w.DType, w.Shape, w.Bytes)
				}
			}
			if got.TotalBytes() > want.TotalBytes() {
				t.Errorf("%s %s: %d bytes predicted, %d written", in, quant, got.TotalBytes(), want.TotalBytes())
			}
		}
	}
}

// TestSplitGGUF: a GGUF split in three parts converts to the very folder
// the whole file does (shard hashes included), opened from any part.
func TestSplitGGUF(t *testing.T) {
	in := filepath.Join(testdata, "models", "tiny-llama3-q4_0.gguf")
	g, err := loader.ReadGGUF(in)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := loader.WriteGGUFSplit(t.TempDir(), "tiny-llama3-q4_0", g, 3)
	if err != nil {
		t.Fatal(err)
	}
	wholeDir, _ := convertTo(t, in, quantKeep, func(o *Options) { o.Name = "m" })
	splitDir, _ := convertTo(t, paths[2], quantKeep, func(o *Options) { o.Name = "m" })
	want, err := manifest.Read(wholeDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := manifest.Read(splitDir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Shards, want.Shards) || !reflect.DeepEqual(got.Tensors, want.Tensors) {
		t.Errorf("the split's conversion differs from the whole file's: %+v, want %+v", got.Shards, want.Shards)
	}
}
