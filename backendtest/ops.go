package backendtest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

var weightTypes = []loader.DType{loader.F32, loader.F16, loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4}

// kquantTypes are the K-quant block types, kept as ggml's blocks: rows are
// whole super-blocks of 256, so they get shapes of their own.
var kquantTypes = []loader.DType{loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K}

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

func testRMSNorm(t *testing.T, b model.Backend) {
	r := rng(2)
	for _, sh := range [][2]int{{1, 64}, {3, 96}, {7, 2048}, {2, 4096}} {
		T, D := sh[0], sh[1]
		xv, wv := randF32(r, T*D, 3), randF32(r, D, 1)
		x, out := input(t, b, xv, T, D), b.NewF32(T, D)
		b.RMSNorm(out, x, upload(t, b, f32Tensor("w", wv, D)), 1e-6)
		want := make([]float32, T*D)
		cpu.RMSNorm(want, xv, wv, 1e-6)
		compare(t, fmt.Sprintf("RMSNorm T=%d D=%d", T, D), read(t, b, out, T*D), want, 1e-5)
	}
}

func testAddRMSNorm(t *testing.T, b model.Backend) {
	r := rng(3)
	for _, sh := range [][2]int{{1, 64}, {5, 128}, {3, 2048}} {
		T, D := sh[0], sh[1]
		xv, rv, wv := randF32(r, T*D, 3), randF32(r, T*D, 3), randF32(r, D, 1)
		x, res := input(t, b, xv, T, D), input(t, b, rv, T, D)
		b.AddRMSNorm(x, res, upload(t, b, f32Tensor("w", wv, D)), 1e-5)
		cpu.AddRMSNorm(xv, rv, wv, 1e-5)
		compare(t, fmt.Sprintf("AddRMSNorm residual T=%d D=%d", T, D), read(t, b, res, T*D), rv, 1e-6)
		compare(t, fmt.Sprintf("AddRMSNorm out T=%d D=%d", T, D), read(t, b, x, T*D), xv, 1e-5)
	}
}

func testMatMul(t *testing.T, b model.Backend, o Options) {
	r := rng(4)
	shapes := [][3]int{{1, 67, 64}, {1, 257, 128}, {5, 96, 256}, {17, 130, 96}, {64, 64, 64}, {1, 1000, 2048}, {33, 200, 512}}
	if o.Short {
		shapes = [][3]int{{1, 67, 64}, {1, 257, 128}, {5, 96, 256}, {17, 130, 96}, {1, 1000, 512}}
	}
	for _, dt := range weightTypes {
		for _, sh := range shapes {
			T, N, K := sh[0], sh[1], sh[2]
			w, wf := weight(r, dt, N, K)
			xv := randF32(r, T*K, 1)
			out := b.NewF32(T, N)
			b.MatMul(out, input(t, b, xv, T, K), upload(t, b, w))
			want := make([]float32, T*N)
			cpu.MatMul(want, xv, wf, T, N, K)
			compare(t, fmt.Sprintf("MatMul %s T=%d N=%d K=%d", dt, T, N, K), read(t, b, out, T*N), want, 1e-4)
		}
	}
	kshapes := [][3]int{{1, 67, 256}, {1, 257, 512}, {3, 96, 768}, {5, 130, 256}, {17, 100, 512}, {64, 64, 256}, {1, 1000, 2048}, {33, 200, 512}}
	if o.Short {
		kshapes = [][3]int{{1, 67, 256}, {3, 96, 768}, {17, 100, 512}, {1, 1000, 512}}
	}
	for _, dt := range kquantTypes {
		for _, sh := range kshapes {
			T, N, K := sh[0], sh[1], sh[2]
			w, wf := weight(r, dt, N, K)
			xv := randF32(r, T*K, 1)
			out := b.NewF32(T, N)
			b.MatMul(out, input(t, b, xv, T, K), upload(t, b, w))
			want := make([]float32, T*N)
			cpu.MatMul(want, xv, wf, T, N, K)
			compare(t, fmt.Sprintf("MatMul %s T=%d N=%d K=%d", dt, T, N, K), read(t, b, out, T*N), want, 1e-4)
		}
	}
}

func testQKNorm(t *testing.T, b model.Backend) {
	r := rng(5)
	for _, sh := range [][4]int{{1, 8, 2, 32}, {3, 4, 2, 128}, {5, 16, 4, 64}} {
		T, H, Hk, Dh := sh[0], sh[1], sh[2], sh[3]
		C := (H + 2*Hk) * Dh
		xv, qw, kw := randF32(r, T*C, 2), randF32(r, Dh, 1), randF32(r, Dh, 1)
		x := input(t, b, xv, T, C)
		b.QKNorm(x, upload(t, b, f32Tensor("q", qw, Dh)), upload(t, b, f32Tensor("k", kw, Dh)), H, Hk, 1e-6)
		cpu.QKNorm(xv, qw, kw, T, H, Hk, Dh, 1e-6)
		compare(t, fmt.Sprintf("QKNorm T=%d H=%d Hk=%d Dh=%d", T, H, Hk, Dh), read(t, b, x, T*C), xv, 1e-5)
	}
}

func testRoPE(t *testing.T, b model.Backend) {
	r := rng(6)
	llama3 := &model.Config{HeadDim: 64, RopeTheta: 500000, RopeScaling: &model.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}}
	plain := &model.Config{HeadDim: 128, RopeTheta: 1e6}
	small := &model.Config{HeadDim: 16, RopeTheta: 10000}
	tiny := &model.Config{HeadDim: 8, RopeTheta: 10000} // stories260K
	for _, neox := range []bool{false, true} {
		for _, c := range []*model.Config{llama3, plain, small, tiny} {
			for _, sh := range [][4]int{{1, 4, 3, 0}, {6, 10, 2, 0}, {1, 4, 2, 1}, {5, 6, 3, 1}} {
				T, heads, extra, withBias := sh[0], sh[1], sh[2], sh[3] == 1
				Dh := c.HeadDim
				C := (heads + extra) * Dh
				pos := make([]int32, T)
				for i := range pos {
					pos[i] = int32(r.IntN(5000))
				}
				xv := randF32(r, T*C, 1)
				rp := &model.RoPE{Dim: Dh, NeoX: neox, InvFreq: c.InvFreq()}
				x := input(t, b, xv, T, C)
				var bias model.Tensor
				var bv []float32
				if withBias { // Qwen2's q/k/v biases, the last `extra` heads not rotated
					bv = randF32(r, C, 1)
					bias = upload(t, b, f32Tensor("bias", bv, C))
				}
				b.RoPE(x, ids(t, b, pos), bias, heads, rp)
				cpu.RoPE(xv, pos, bv, C, heads, neox, rp.InvFreq)
				compare(t, fmt.Sprintf("RoPE neox=%v Dh=%d T=%d heads=%d of %d bias=%v", neox, Dh, T, heads, heads+extra, withBias), read(t, b, x, T*C), xv, 3e-6)
			}
		}
	}
}

func testAttention(t *testing.T, b model.Backend, o Options) {
	tol := o.AttentionTol
	if tol == 0 {
		tol = 1e-4
	}
	r := rng(7)
	// prior positions, then T new tokens
	// A sliding window (the last column, 0 for none) cuts keys inside a
	// chunk or tile, drops whole ones, spans one token or covers them all.
	windowed := [][6]int{{8, 2, 16, 0, 12, 5}, {4, 2, 32, 300, 1, 100}, {8, 2, 32, 100, 7, 64}, {4, 1, 128, 511, 2, 1}, {16, 4, 64, 0, 33, 16}, {4, 2, 32, 20, 3, 4096}}
	cases := [][6]int{ // H, Hk, Dh, prior, T, window
		{8, 2, 16, 0, 1, 0}, {8, 2, 16, 0, 12, 0}, {4, 2, 32, 254, 1, 0}, {4, 2, 32, 255, 1, 0}, {4, 2, 32, 256, 1, 0},
		{8, 8, 64, 1000, 1, 0}, {32, 8, 128, 300, 1, 0}, {8, 2, 32, 100, 7, 0}, {16, 4, 64, 0, 33, 0}, {4, 1, 128, 511, 2, 0},
	}
	if o.Short {
		cases = [][6]int{{8, 2, 16, 0, 1, 0}, {8, 2, 16, 0, 12, 0}, {4, 2, 32, 255, 1, 0}, {4, 2, 32, 256, 1, 0}, {8, 2, 32, 100, 7, 0}, {4, 1, 128, 511, 2, 0}}
	}
	for _, c := range append(cases, windowed...) {
		H, Hk, Dh, prior, T, window := c[0], c[1], c[2], c[3], c[4], c[5]
		C := (H + 2*Hk) * Dh
		S := prior + T + 3
		cache, err := b.NewKVCache(2, S, Hk, Dh)
		if err != nil {
			t.Fatal(err)
		}
		kc, vc := make([]float32, S*Hk*Dh), make([]float32, S*Hk*Dh)
		step := func(start, n int, check bool) {
			pos := make([]int32, n)
			for i := range pos {
				pos[i] = int32(start + i)
			}
			qv := randF32(r, n*C, 2)
			out := b.NewF32(n, H*Dh)
			b.Attention(out, input(t, b, qv, n, C), ids(t, b, pos), cache, 1, window)
			want := make([]float32, n*H*Dh)
			cpu.Attention(want, qv, pos, kc, vc, n, H, Hk, Dh, window)
			if check {
				compare(t, fmt.Sprintf("Attention H=%d Hk=%d Dh=%d at %d T=%d window=%d", H, Hk, Dh, start, n, window), read(t, b, out, len(want)), want, tol)
			}
		}
		if prior > 0 {
			step(0, prior, false)
		}
		step(prior, T, true)
	}
}

func testSiluMul(t *testing.T, b model.Backend) {
	r := rng(8)
	for _, sh := range [][2]int{{1, 32}, {3, 172}, {2, 8192}} {
		T, F := sh[0], sh[1]
		gv := randF32(r, T*2*F, 6)
		out := b.NewF32(T, F)
		b.SiluMul(out, input(t, b, gv, T, 2*F))
		want := make([]float32, T*F)
		cpu.SiluMul(want, gv, T, F)
		compare(t, fmt.Sprintf("SiluMul T=%d F=%d", T, F), read(t, b, out, T*F), want, 1e-5)
	}
}

func testMoE(t *testing.T, b model.Backend, o Options) {
	r := rng(9)
	cases := [][5]int{{1, 64, 128, 32, 8}, {5, 64, 128, 32, 8}, {3, 128, 16, 64, 4}}
	kcases := [][5]int{{1, 256, 8, 256, 2}, {5, 256, 8, 256, 2}, {3, 512, 4, 256, 3}}
	for _, dt := range append([]loader.DType{loader.F32, loader.Q8_0, loader.Q4_0, loader.Q4}, kquantTypes...) {
		cases := cases
		if slices.Contains(kquantTypes, dt) {
			cases = kcases
		}
		for _, c := range cases {
			T, D, E, F, A := c[0], c[1], c[2], c[3], c[4]
			for _, norm := range []bool{true, false} {
				rw, rf := weight(r, loader.F32, E, D)
				gw, gf := weight(r, dt, E, 2*F, D)
				dw, df := weight(r, dt, E, D, F)
				xv := randF32(r, T*D, 1)
				out := b.NewF32(T, D)
				b.MoE(out, input(t, b, xv, T, D), upload(t, b, rw), upload(t, b, gw), upload(t, b, dw), A, norm)
				want := make([]float32, T*D)
				cpu.MoE(want, xv, rf, gf, df, T, D, E, F, A, norm)
				compare(t, fmt.Sprintf("MoE %s T=%d D=%d E=%d F=%d A=%d norm=%v", dt, T, D, E, F, A, norm), read(t, b, out, T*D), want, 1e-4)
			}
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
