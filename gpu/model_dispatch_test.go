//go:build js

package gpu

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/internal/testkit/golden"
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
