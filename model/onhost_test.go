package model

import "testing"

// TestOnHost: the tensors Build reads on the host (so the browser keeps
// their bytes in Go rather than uploading them): the RoPE divisors and
// Gemma 4's layer output scales, no others.
func TestOnHost(t *testing.T) {
	for name, want := range map[string]bool{
		NameRopeFreqs: true, NameRopeFactorsLong: true, "blk.0.layer_output_scale.weight": true, "blk.34.layer_output_scale.weight": true,
		"blk.3.layer_output_scale.weight.x": false, "blk.3.attn_qkv.weight": false, NameEmbed: false, NamePLEmbed: false,
	} {
		if got := OnHost(name); got != want {
			t.Errorf("OnHost(%q) = %v, want %v", name, got, want)
		}
	}
}
