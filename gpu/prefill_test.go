//go:build js

package gpu

import (
	"fmt"
	"strings"
	"testing"

	"wasmllm/internal/testkit/golden"
)

// TestPrefillChunk: the backend's preferred prefill batch is 128 tokens on
// a CPU adapter (512 on a GPU), and a 512-token batch, the GPU's chunk,
// runs in one forward with every row's logits as the CPU backend's (the
// prefill GEMM's 8 token tiles, attention_prefill's tiles over 512 keys).
func TestPrefillChunk(t *testing.T) {
	b := modelBackend(t)
	want := 512
	if b.d.AdapterInfo.Fallback {
		want = 128
	}
	if got := b.PrefillChunk(); got != want {
		t.Errorf("PrefillChunk() = %d on %+v, want %d", got, b.d.AdapterInfo, want)
	}
	var g *golden.File
	for _, f := range exactGoldens(t) {
		if strings.Contains(f.Name, "stories260K") {
			g = f
			break
		}
	}
	if g == nil {
		t.Fatal("no stories260K golden")
	}
	gm, cm := goldenModels(t, b, goldenWeights(t, g))
	defer freeModel(b, gm)
	const T = 512
	ids := make([]int32, T)
	for i := range ids {
		ids[i] = int32(1 + (i*7919)%(gm.Config.Vocab-1))
	}
	gr := newGoldenRun(t, gm, T, "gpu")
	defer gr.free()
	cr := newGoldenRun(t, cm, T, "cpu")
	got, ref := gr.forward(ids, 0), cr.forward(ids, 0)
	vs := &rowChecker{t: t, what: g.Name + " 512-token batch, gpu vs cpu", tol: kvTolerance(g.Tolerance, gr.cache)}
	for i := range got {
		vs.check(fmt.Sprintf("row %d", i), got[i], ref[i])
	}
	vs.log()
}
