package model

import (
	"fmt"
	"math"
)

// Gemma 3's layers: every layer is local (sliding-window attention, the
// local RoPE base, never scaled) or global (full causal attention,
// RopeTheta with RopeScaling); both have q/k norm, sandwich norms and a
// GeGLU channel mixer, and the embedding is scaled by sqrt(D). The kinds
// are the family table's (LocalGlobal, SandwichNorm, ChannelGeGLU,
// EmbedScale, SoftCap), for the other families that have them.

var gemma3Attention = AttentionFeatures{QKNorm: true, SlidingWindow: true, LocalGlobal: true, SandwichNorm: true}

// localGlobal sets layer l's window and rotation by its type: a local
// layer the config's window and the local base unscaled, a global layer
// every position and the global rotation.
func (c *Config) localGlobal(a *AttentionSpec, l int) {
	if l >= len(c.LayerTypes) || c.LayerTypes[l] != LayerSlidingAttention {
		a.Window = 0
		return
	}
	a.Rope.Scaling = nil
	if c.RopeLocalTheta != 0 {
		a.Rope.Theta = c.RopeLocalTheta
	}
}

// Local reports whether layer l is a local (sliding-window) layer.
func (c *Config) Local(l int) bool {
	return l < len(c.LayerTypes) && c.LayerTypes[l] == LayerSlidingAttention
}

// validateGemma checks the Gemma fields (the local base, the soft-cap, a
// local layer's window) against the family fam. Errors are *ConfigError.
func (c *Config) validateGemma(fam *Family) error {
	switch t := c.RopeLocalTheta; {
	case t != 0 && (!finite(t) || t <= 1 || t > 1e12):
		return &ConfigError{"rope_local_base_freq", t, "want a finite value in (1, 1e12]"}
	case !finite(c.FinalLogitSoftcap) || c.FinalLogitSoftcap < 0 || c.FinalLogitSoftcap > 1e6:
		return &ConfigError{"final_logit_softcapping", c.FinalLogitSoftcap, "want a finite value in [0, 1e6]"}
	}
	if err := c.validateGemma4(fam); err != nil {
		return err
	}
	if fam.Attention.LocalGlobal && c.SlidingWindow == 0 {
		for l := range c.LayerTypes {
			if c.Local(l) {
				return &ConfigError{"sliding_window", 0, fmt.Sprintf("layer %d is a sliding_attention layer", l)}
			}
		}
	}
	return nil
}

// EmbedScale is the factor the family multiplies the token embedding by
// before the first layer: sqrt(D) rounded to f32 (llama.cpp's sqrtf) for
// a family with EmbedScale, else 0 (none).
func (c *Config) EmbedScale() float32 {
	if fam, ok := FamilyOf(c.Arch); ok && fam.EmbedScale {
		return float32(math.Sqrt(float64(c.Hidden)))
	}
	return 0
}
