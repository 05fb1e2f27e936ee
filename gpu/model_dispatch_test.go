//go:build js

package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
)

// TestDecodeDispatchesPerLayer counts the dispatches a decode step records
// per layer (the step's, less the embedding and the lm_head's parts): at
// most 7 for a dense layer and 9 for an MoE one (model.Backend's fused
// ops).
func TestDecodeDispatchesPerLayer(t *testing.T) {
	b := modelBackend(t)
	for _, c := range []struct {
		name string
		most int
	}{{"tiny-llama3-q4_0", 7}, {"tiny-qwen3-q8_0", 7}, {"tiny-qwen3moe-q4_0", 9}} {
		t.Run(c.name, func(t *testing.T) {
			if f := os.Getenv("WASMLLM_GOLDEN"); !strings.Contains(c.name, f) {
				t.Skip("WASMLLM_GOLDEN")
			}
			g := golden.Read(t, filepath.Join(goldenDir, c.name+".golden"))
			m, err := model.Build(b, goldenWeights(t, g))
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, m)
			T := len(g.Tokens)
			cache, err := m.NewCache(T + 2)
			if err != nil {
				t.Fatal(err)
			}
			defer b.FreeKVCache(cache)
			logits := make([]float32, m.Config.Vocab)
			step := func(ids []int32, pos int) {
				out, err := m.Forward(cache, ids, pos, false)
				if err != nil {
					t.Fatal(err)
				}
				if err := b.ReadF32(out, logits); err != nil {
					t.Fatal(err)
				}
			}
			step(g.Tokens, 0)
			before := b.Device().Stats()
			step(g.Tokens[T-1:], T)
			n := b.Device().Stats().Sub(before).Dispatches
			other := int64(1 + len(m.LMHead.(*tensor).parts)) // the embedding, the lm_head's parts
			L := int64(len(m.Layers))
			per := (n - other) / L
			t.Logf("%s: %d dispatches in a decode step: %d layers of %d, %d others", c.name, n, L, per, other)
			if (n-other)%L != 0 {
				t.Errorf("%d dispatches less %d others are not a whole number per layer of %d layers", n, other, L)
			}
			if per > int64(c.most) {
				t.Errorf("%d dispatches per layer, want at most %d", per, c.most)
			}
			// The backend's own count per layer (model.LayerMarker, which
			// the bench reports) agrees.
			if got := b.LayerDispatches(); len(got) != len(m.Layers) || slices.ContainsFunc(got, func(d int) bool { return int64(d) != per }) {
				t.Errorf("LayerDispatches %v, want %d layers of %d", got, L, per)
			}
		})
	}
}

// TestDecodeDispatchesStacked counts a decode step's dispatches per layer
// for k-llama3-q3_k_m, whose q/k/v are Q3_K q and k rows with Q5_K v rows
// on both layers: kept as row blocks (StackRows), the q/k/v is the norm
// and one dispatch per block; widened to F32 (what the converter wrote
// before) it was one fused GEMV. So a mixed layer costs two dispatches
// more than the widened one and reads a seventh of its q/k/v bytes.
func TestDecodeDispatchesStacked(t *testing.T) {
	b := modelBackend(t)
	g := golden.Read(t, "../testdata/k/golden/k-llama3-q3_k_m.golden")
	perLayer := map[string][]int{}
	for _, mode := range []string{"stacked", "widened"} {
		w := goldenWeights(t, g)
		for l := range w.Config.Layers {
			name := fmt.Sprintf(model.NameQKV, l)
			qkv := w.Tensors[name]
			if qkv.DType != loader.Mixed {
				t.Fatalf("%s is %s, want a stack of Q3_K and Q5_K rows", name, qkv.DType)
			}
			if mode == "widened" {
				wide, err := qkv.Widened()
				if err != nil {
					t.Fatal(err)
				}
				w.Tensors[name] = wide
			}
		}
		m, err := model.Build(b, w)
		if err != nil {
			t.Fatal(err)
		}
		T := len(g.Tokens)
		cache, err := m.NewCache(T + 2)
		if err != nil {
			t.Fatal(err)
		}
		logits := make([]float32, m.Config.Vocab)
		for _, s := range []struct {
			ids []int32
			pos int
		}{{g.Tokens, 0}, {g.Tokens[T-1:], T}} {
			out, err := m.Forward(cache, s.ids, s.pos, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.ReadF32(out, logits); err != nil {
				t.Fatal(err)
			}
		}
		perLayer[mode] = b.LayerDispatches()
		b.FreeKVCache(cache)
		freeModel(b, m)
	}
	t.Logf("dispatches per layer in a decode step: stacked %v, widened to F32 %v", perLayer["stacked"], perLayer["widened"])
	s, wd := perLayer["stacked"], perLayer["widened"]
	if len(s) != 2 || len(wd) != 2 {
		t.Fatalf("LayerDispatches: stacked %v, widened %v", s, wd)
	}
	for l := range s {
		if s[l] != wd[l]+2 {
			t.Errorf("layer %d: %d dispatches stacked, %d widened: want the norm and one per block (2 more)", l, s[l], wd[l])
		}
	}
}
