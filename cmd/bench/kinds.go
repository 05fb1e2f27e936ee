package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"wasmllm/model"
)

// layerKind names a layer's kinds for the report: its token mixer
// ("attention", or "local" and "global" in a family of local and global
// layers, "deltanet"), then "_shared_kv" when it reads another layer's
// keys and values, "_moe" for routed experts, "_ple" for Gemma 4's
// per-layer input.
func layerKind(fam *model.Family, sp model.LayerSpec) string {
	k := "attention"
	switch {
	case sp.IsDeltaNet():
		k = "deltanet"
	case fam != nil && fam.Attention.LocalGlobal && sp.Attention.Window > 0:
		k = "local"
	case fam != nil && fam.Attention.LocalGlobal:
		k = "global"
	}
	if !sp.IsDeltaNet() && sp.Attention.SharesKV {
		k += "_shared_kv"
	}
	if sp.Channel.Kind == model.ChannelMoE || sp.Channel.Kind == model.ChannelGeGLUMoE {
		k += "_moe"
	}
	if sp.PerLayer {
		k += "_ple"
	}
	return k
}

// layerKinds reads a converted model's config from its manifest.json and
// names each layer's kinds.
func layerKinds(manifestPath string) ([]string, error) {
	raw, err := os.ReadFile(manifestPath)
	if err != nil {
		return nil, err
	}
	var man struct {
		Config model.Config `json:"config"`
	}
	if err := json.Unmarshal(raw, &man); err != nil {
		return nil, fmt.Errorf("%s: %w", manifestPath, err)
	}
	fam, _ := model.FamilyOf(man.Config.Arch)
	var kinds []string
	for _, sp := range man.Config.Specs() {
		kinds = append(kinds, layerKind(fam, sp))
	}
	return kinds, nil
}

// kindDispatch is the most dispatches a decode step recorded for one
// layer of a kind, over every model's WebGPU run (Chromium).
type kindDispatch struct {
	kind string
	most int
}

// kindDispatches groups the WebGPU engines' LayerDispatches by the
// models' layer kinds, sorted by kind.
func (r *Report) kindDispatches() []kindDispatch {
	most := map[string]int{}
	for _, m := range r.Models {
		g := m.engine(engineGPU)
		if g == nil || len(g.LayerDispatches) != len(m.LayerKinds) {
			continue
		}
		for l, n := range g.LayerDispatches {
			k := m.LayerKinds[l]
			most[k] = max(most[k], n)
		}
	}
	var out []kindDispatch
	for k, n := range most {
		out = append(out, kindDispatch{k, n})
	}
	slices.SortFunc(out, func(a, b kindDispatch) int { return strings.Compare(a.kind, b.kind) })
	return out
}
