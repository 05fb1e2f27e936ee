package backendtest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"wasmllm/cpu"
	"wasmllm/model"
)

func testEmbed(t *testing.T, b model.Backend) {
	r := rng(1)
	for _, dt := range weightTypes {
		for _, sh := range [][2]int{{67, 64}, {5, 96}} {
			V, D := sh[0], sh[1]
			w, wf := weight(r, dt, V, D)
			tab := upload(t, b, w)
			idv := []int32{0, int32(V - 1), 3, 3, int32(V / 2)}
			out := b.NewF32(len(idv), D)
			b.Embed(out, tab, ids(t, b, idv))
			want := make([]float32, len(idv)*D)
			cpu.Embed(want, wf, idv, D)
			compare(t, fmt.Sprintf("Embed %s V=%d D=%d", dt, V, D), read(t, b, out, len(want)), want, 0)
		}
	}
	for _, dt := range kquantTypes {
		for _, sh := range [][2]int{{67, 256}, {5, 768}} {
			V, D := sh[0], sh[1]
			w, wf := weight(r, dt, V, D)
			tab := upload(t, b, w)
			idv := []int32{0, int32(V - 1), 3, 3, int32(V / 2)}
			out := b.NewF32(len(idv), D)
			b.Embed(out, tab, ids(t, b, idv))
			want := make([]float32, len(idv)*D)
			cpu.Embed(want, wf, idv, D)
			compare(t, fmt.Sprintf("Embed %s V=%d D=%d", dt, V, D), read(t, b, out, len(want)), want, 0)
		}
	}
}

func testCopyRows(t *testing.T, b model.Backend) {
	r := rng(10)
	xv := randF32(r, 7*33, 1)
	src := input(t, b, xv, 7, 33)
	for _, c := range [][2]int{{0, 1}, {6, 1}, {2, 3}} {
		dst := b.NewF32(c[1], 33)
		b.CopyRows(dst, src, c[0])
		compare(t, fmt.Sprintf("CopyRows row0=%d rows=%d", c[0], c[1]), read(t, b, dst, c[1]*33), xv[c[0]*33:(c[0]+c[1])*33], 0)
	}
}

func testArgmax(t *testing.T, b model.Backend) {
	r := rng(11)
	for _, sh := range [][2]int{{1, 67}, {3, 1000}, {1, 151936}, {2, 128256}} {
		T, V := sh[0], sh[1]
		lv := randF32(r, T*V, 10)
		// a tie: the lowest index must win
		lv[V/3], lv[V/2] = 20, 20
		out := b.NewI32(T)
		b.Argmax(out, input(t, b, lv, T, V))
		want := make([]int32, T)
		cpu.Argmax(want, lv, T, V)
		compareI(t, fmt.Sprintf("Argmax T=%d V=%d", T, V), readI(t, b, out, T), want)
	}
	// Non-finite logits: NaN and +Inf give -1-i (lowest such i), -Inf is
	// an ordinary (masked) value.
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	V := 5000
	rows := [][]float32{
		{},                               // every logit NaN (set below)
		{4999: nan, 2500: 30},            // NaN after a large maximum
		{3000: inf, 100: nan, 50: 30},    // +Inf after NaN: the lowest wins
		{2049: inf, 4000: inf},           // two +Inf across argmax blocks
		{7: float32(math.Inf(-1)), 9: 1}, // -Inf is an ordinary value
	}
	lv := make([]float32, len(rows)*V)
	for i, row := range rows {
		copy(lv[i*V:], randF32(r, V, 10))
		for j, v := range row {
			if v != 0 {
				lv[i*V+j] = v
			}
		}
	}
	for i := range V { // row 0: every logit NaN
		lv[i] = nan
	}
	T := len(rows)
	out := b.NewI32(T)
	b.Argmax(out, input(t, b, lv, T, V))
	want := make([]int32, T)
	cpu.Argmax(want, lv, T, V)
	if !slices.Equal(want[:4], []int32{-1, -5000, -101, -2050}) || want[4] < 0 {
		t.Errorf("reference Argmax of non-finite rows: %v", want)
	}
	compareI(t, "Argmax with NaN and +Inf", readI(t, b, out, T), want)
}

func testMaskLogits(t *testing.T, b model.Backend) {
	mb, ok := b.(model.LogitMasker)
	if !ok {
		t.Skip("the backend has no MaskLogits (optional)")
	}
	r := rng(12)
	for _, sh := range [][2]int{{1, 33}, {3, 1000}, {1, 151936}, {2, 4097}} {
		T, V := sh[0], sh[1]
		lv := randF32(r, T*V, 10)
		words := make([]int32, (V+31)/32)
		for i := range words {
			switch i % 3 {
			case 0:
				words[i] = int32(r.Uint32())
			case 1:
				words[i] = -1 // every bit
			}
		}
		l := input(t, b, lv, T, V)
		m := b.NewI32(len(words))
		b.WriteI32(m, words)
		mb.MaskLogits(l, m)
		want := append([]float32(nil), lv...)
		cpu.MaskLogits(want, words, T, V)
		compare(t, fmt.Sprintf("MaskLogits T=%d V=%d", T, V), read(t, b, l, T*V), want, 0)
	}
}

func testTopK(t *testing.T, b model.Backend) {
	r := rng(12)
	for _, c := range [][3]int{{1, 67, 1}, {2, 1000, 8}, {1, 151936, 40}, {1, 5000, 64}} {
		T, V, k := c[0], c[1], c[2]
		lv := randF32(r, T*V, 10)
		lv[V-1], lv[1] = 15, 15
		gi, gv := b.NewI32(T, k), b.NewF32(T, k)
		b.TopK(gi, gv, input(t, b, lv, T, V), k)
		wi, wv := make([]int32, T*k), make([]float32, T*k)
		cpu.TopK(wi, wv, lv, T, V, k)
		what := fmt.Sprintf("TopK T=%d V=%d k=%d", T, V, k)
		compareI(t, what+" ids", readI(t, b, gi, T*k), wi)
		compare(t, what+" vals", read(t, b, gv, T*k), wv, 0)
	}
	// NaN reads as +Inf and ranks first, so a sampler sees it.
	V, k := 3000, 4
	lv := randF32(r, V, 10)
	lv[2500], lv[700], lv[10] = float32(math.NaN()), float32(math.Inf(1)), 40
	gi, gv := b.NewI32(1, k), b.NewF32(1, k)
	b.TopK(gi, gv, input(t, b, lv, 1, V), k)
	wi, wv := make([]int32, k), make([]float32, k)
	cpu.TopK(wi, wv, lv, 1, V, k)
	if wi[0] != 700 || wi[1] != 2500 || wi[2] != 10 {
		t.Errorf("reference TopK with NaN and +Inf: ids %v", wi)
	}
	compareI(t, "TopK with NaN ids", readI(t, b, gi, k), wi)
	compare(t, "TopK with NaN vals", read(t, b, gv, k), wv, 0)
}
