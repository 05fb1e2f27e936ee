package model

import (
	"fmt"
	"testing"
)

// TestTiledHead: llama.cpp's _reorder_v_heads turns Hugging Face's grouped
// value heads [G0_v0, G0_v1, G0_v2, G1_v0, G1_v1, G1_v2] (n_k = 2, three
// value heads per key head) into the tiled [G0_v0, G1_v0, G0_v1, G1_v1,
// G0_v2, G1_v2], so that tiled head j reads key head j mod n_k.
func TestTiledHead(t *testing.T) {
	grouped := []string{"G0_v0", "G0_v1", "G0_v2", "G1_v0", "G1_v1", "G1_v2"}
	want := []string{"G0_v0", "G1_v0", "G0_v1", "G1_v1", "G0_v2", "G1_v2"}
	for j := range want {
		if got := grouped[tiledHead(j, 2, 3)]; got != want[j] {
			t.Errorf("tiled head %d is %s, want %s", j, got, want[j])
		}
		if key := fmt.Sprintf("G%d", j%2); want[j][:2] != key {
			t.Errorf("tiled head %d reads %s, want key head %s", j, want[j][:2], key)
		}
	}
	// Rows: each head's hd rows move together, rows before first stay.
	data := []byte{9, 9, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}
	got := reorderVRows(data, 1, 2, 2, 6, 2)
	wantRows := []byte{9, 9, 0, 0, 3, 3, 1, 1, 4, 4, 2, 2, 5, 5}
	if string(got) != string(wantRows) {
		t.Errorf("reorderVRows: %v, want %v", got, wantRows)
	}
}
