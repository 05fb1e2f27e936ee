package gpu

import (
	"errors"
	"testing"

	"wasmllm/model"
)

// TestCheckConfig: Qwen3.5's configs pass (hybrid layers, the output
// gate, the shared expert); a Gated DeltaNet head wider than the kernels
// take is refused with a typed error naming the architecture.
func TestCheckConfig(t *testing.T) {
	L, F := model.LayerLinearAttention, model.LayerFullAttention
	hybrid := &model.Config{Arch: model.ArchQwen35, Layers: 2, LayerTypes: []string{L, F}, LinearHeadDim: 128}
	gate := &model.Config{Arch: model.ArchQwen35, Layers: 1, AttnOutputGate: true}
	shared := &model.Config{Arch: model.ArchQwen35MoE, Layers: 1, SharedExpertFFN: 64}
	for _, c := range []*model.Config{hybrid, gate, shared, {Arch: model.ArchQwen3, Layers: 2, HeadDim: 64}} {
		if err := CheckConfig(c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	// Gemma 4 E2B's global heads of 512 are taken; wider ones are not.
	S := model.LayerSlidingAttention
	e2b := func(dh int) *model.Config {
		return &model.Config{Arch: model.ArchGemma4, Vocab: 512, Hidden: 64, Layers: 2, Heads: 4, KVHeads: 1, HeadDim: dh, HeadDimSWA: 256,
			FFN: 96, RMSEps: 1e-6, RopeTheta: 1e6, RopeLocalTheta: 1e4, MaxContext: 8192, SlidingWindow: 6, LayerTypes: []string{S, F}}
	}
	if err := CheckConfig(e2b(512)); err != nil {
		t.Errorf("Gemma 4 with global heads of 512: %v", err)
	}
	var ue0 *model.UnsupportedError
	if err := CheckConfig(e2b(640)); !errors.As(err, &ue0) || ue0.Arch != model.ArchGemma4 {
		t.Errorf("heads of 640: got %v, want a *model.UnsupportedError", err)
	}
	wide := &model.Config{Arch: model.ArchQwen35, Layers: 2, LayerTypes: []string{L, F}, LinearHeadDim: 512}
	err := CheckConfig(wide)
	var ue *model.UnsupportedError
	if !errors.As(err, &ue) || ue.Arch != wide.Arch || ue.Backend != "webgpu" || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("heads of 512: got %v, want a *model.UnsupportedError for %s", err, wide.Arch)
	}
}
