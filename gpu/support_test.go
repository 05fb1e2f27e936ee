package gpu

import (
	"errors"
	"testing"

	"wasmllm/model"
)

// TestCheckConfig: Qwen3.5's configs are refused with a typed error naming
// the architecture; the other families pass.
func TestCheckConfig(t *testing.T) {
	hybrid := &model.Config{Arch: model.ArchQwen35, Layers: 2, LayerTypes: []string{model.LayerLinearAttention, model.LayerFullAttention}}
	gate := &model.Config{Arch: model.ArchQwen35, Layers: 1, AttnOutputGate: true}
	shared := &model.Config{Arch: model.ArchQwen35MoE, Layers: 1, SharedExpertFFN: 64}
	for _, c := range []*model.Config{hybrid, gate, shared} {
		err := CheckConfig(c)
		var ue *model.UnsupportedError
		if !errors.As(err, &ue) || ue.Arch != c.Arch || ue.Backend != "webgpu" || !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%+v: got %v, want a *model.UnsupportedError for %s", c, err, c.Arch)
		}
	}
	if err := CheckConfig(&model.Config{Arch: model.ArchQwen3, Layers: 2, HeadDim: 64}); err != nil {
		t.Errorf("qwen3: %v", err)
	}
}
