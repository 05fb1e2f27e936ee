//go:build js

package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/internal/testkit/golden"
)

// TestModelSlidingWindow runs tiny-llama3 with a sliding window of 5 keys
// (Mistral's sliding_window) on the GPU and the CPU: a 70-token prompt in
// one batch (the prefill kernel, whose tiles straddle the window), then
// token by token (flash-decoding, whose chunks of 64 keys it cuts), both
// against the CPU's rows.
func TestModelSlidingWindow(t *testing.T) {
	const name = "tiny-llama3-q8_0"
	if f := os.Getenv("WASMLLM_GOLDEN"); !strings.Contains(name, f) && !strings.Contains("window", f) {
		t.Skip("WASMLLM_GOLDEN")
	}
	b := modelBackend(t)
	g := golden.Read(t, filepath.Join(goldenDir, name+".golden"))
	w := goldenWeights(t, g)
	w.Config.SlidingWindow = 5
	gm, cm := goldenModels(t, b, w)
	defer freeModel(b, gm)
	ids := make([]int32, 70)
	for i := range ids {
		ids[i] = int32((i*37 + 11) % 256)
	}
	const decode = 6
	gr, cr := newGoldenRun(t, gm, len(ids)+decode, "gpu"), newGoldenRun(t, cm, len(ids)+decode, "cpu")
	defer gr.free()
	vsCPU := &rowChecker{t: t, what: "gpu vs cpu, window 5", tol: g.Tolerance}
	defer vsCPU.log()
	want, got := cr.forward(ids, 0), gr.forward(ids, 0)
	for i := range want {
		vsCPU.check(fmt.Sprintf("prompt row %d", i), got[i], want[i])
	}
	for s := range decode {
		id := []int32{int32(s*5 + 3)}
		pos := len(ids) + s
		vsCPU.check(fmt.Sprintf("decode at %d", pos), gr.forward(id, pos)[0], cr.forward(id, pos)[0])
	}
}
