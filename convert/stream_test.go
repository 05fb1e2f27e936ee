package convert

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"wasmllm/loader"
)

// TestLazyMatchesEager converts GGUF and Hugging Face inputs from their lazy
// tensors, as convert does, and from the same weights read whole: the
// folders must be identical byte for byte.
func TestLazyMatchesEager(t *testing.T) {
	for _, in := range []string{"models/tiny-qwen3moe-dq8.gguf", "models/tiny-qwen3moe-q4_0.gguf", "models/tiny-llama3-q8_0.gguf", "hf/tiny-qwen3moe", "hf/tiny-llama3"} {
		for _, q := range []string{quantKeep, quantQ4} {
			t.Run(in+"/"+q, func(t *testing.T) {
				in := filepath.Join(testdata, in)
				lazy, _ := convertTo(t, in, q)
				src, err := Open(in, "")
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				for name, x := range src.Weights.Tensors {
					if !x.Lazy() {
						t.Errorf("%s was read when the source was opened", name)
					}
				}
				src.Weights = sourceWeights(t, in)
				eager := filepath.Join(t.TempDir(), "model")
				if _, err := FromSource(context.Background(), Options{In: in, Out: eager, Quant: q, Workers: 2}, src); err != nil {
					t.Fatal(err)
				}
				sameFolder(t, lazy, eager)
			})
		}
	}
}

func sameFolder(t *testing.T, a, b string) {
	t.Helper()
	names := listDir(t, a)
	if other := listDir(t, b); !slices.Equal(names, other) {
		t.Fatalf("%s holds %v, %s holds %v", a, names, b, other)
	}
	for _, n := range names {
		x, _ := os.ReadFile(filepath.Join(a, n))
		y, _ := os.ReadFile(filepath.Join(b, n))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs", n)
		}
	}
}

// TestStreamingBound converts models of many layers, each tensor a small
// part of the whole, and measures the live heap (after a collection) as
// each tensor is loaded: converting from lazy tensors it stays within a few
// tensors, while weights read whole (as convert used to read them) hold
// about the whole model.
func TestStreamingBound(t *testing.T) {
	const layers = 10
	for _, in := range []string{deepGGUF(t, layers), deepHF(t, layers)} {
		t.Run(filepath.Base(in), func(t *testing.T) {
			lazy, largest, total := heapPeak(t, in, false)
			eager, _, _ := heapPeak(t, in, true)
			t.Logf("model %s, largest tensor %s; live heap peak over the start: lazy %s, read whole %s",
				mib(total), mib(largest), mib(lazy), mib(eager))
			if total < 10*largest {
				t.Fatalf("test model of %d bytes is not much larger than its largest tensor (%d)", total, largest)
			}
			if lazy > 4*largest {
				t.Errorf("lazy conversion held %d bytes, more than 4 tensors of %d", lazy, largest)
			}
			if eager < total/2 {
				t.Errorf("conversion from weights read whole held only %d of %d bytes: the measure misses held tensors", eager, total)
			}
		})
	}
}

// heapPeak converts in and returns the most live heap seen just after a
// tensor is loaded (with whatever is left of the tensors before it), over
// the live heap before in was opened, and the sizes of the largest tensor
// and of all of them. With eager, it converts weights read whole, as
// source.Weights reads them. Each tensor must load once.
func heapPeak(t *testing.T, in string, eager bool) (peak, largest, total int64) {
	t.Helper()
	base := liveHeap()
	src, err := Open(in, "")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if eager {
		src.Weights = sourceWeights(t, in)
	}
	loads := map[string]int{}
	for name, x := range src.Weights.Tensors {
		n, err := x.Size()
		if err != nil {
			t.Fatal(err)
		}
		largest, total = max(largest, int64(n)), total+int64(n)
		loads[name] = 0
		if !x.Lazy() {
			if !eager {
				t.Fatalf("%s was read when the source was opened", name)
			}
			data := x.Data // held as the weights hold it, until the tensor is converted
			x.Data, x.Load = nil, func() ([]byte, error) { return data, nil }
		}
		load := x.Load
		x.Load = func() ([]byte, error) {
			loads[name]++
			b, err := load()
			peak = max(peak, liveHeap()-base)
			return b, err
		}
	}
	o := Options{In: in, Out: filepath.Join(t.TempDir(), "model"), Quant: quantKeep, Workers: 2}
	if _, err := FromSource(context.Background(), o, src); err != nil {
		t.Fatal(err)
	}
	for name, n := range loads {
		if n != 1 {
			t.Errorf("%s loaded %d times", name, n)
		}
	}
	return peak, largest, total
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

var layerName = regexp.MustCompile(`^(blk|model\.layers)\.(\d+)\.(.*)$`)

// replicateLayers maps a tensor of a two-layer model onto a model of
// layers layers: a layer's tensor is copied into every other layer, the
// rest kept.
func replicateLayers(t *testing.T, x *loader.Tensor, layers int) []*loader.Tensor {
	m := layerName.FindStringSubmatch(x.Name)
	if m == nil {
		return []*loader.Tensor{x}
	}
	l0, _ := strconv.Atoi(m[2])
	var out []*loader.Tensor
	for l := l0; l < layers; l += 2 {
		out = append(out, &loader.Tensor{Name: fmt.Sprintf("%s.%d.%s", m[1], l, m[3]), DType: x.DType, Shape: x.Shape, Data: x.Data})
	}
	return out
}

// deepGGUF writes tiny-qwen3moe-dq8.gguf with its two layers repeated to
// make layers layers.
func deepGGUF(t *testing.T, layers int) string {
	t.Helper()
	g, err := loader.ReadGGUF(filepath.Join(testdata, "models", "tiny-qwen3moe-dq8.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	meta := g.MetaKVs()
	for i, kv := range meta {
		if kv.Key == "qwen3moe.block_count" {
			meta[i].Value = uint32(layers)
		}
	}
	var ts []*loader.Tensor
	for i := range g.Tensors {
		ts = append(ts, replicateLayers(t, g.TensorAt(i), layers)...)
	}
	var buf bytes.Buffer
	if err := loader.WriteGGUF(&buf, g.Version, meta, ts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("deep-%d.gguf", layers))
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// deepHF writes testdata/hf/tiny-qwen3moe with its two layers repeated to
// make layers layers.
func deepHF(t *testing.T, layers int) string {
	t.Helper()
	return rewriteHF(t, filepath.Join(testdata, "hf", "tiny-qwen3moe"),
		func(cfg map[string]any) { cfg["num_hidden_layers"] = layers },
		func(x *loader.Tensor) []*loader.Tensor { return replicateLayers(t, x, layers) })
}
