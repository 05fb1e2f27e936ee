package backendtest

import (
	"fmt"
	"testing"

	"wasmllm/cpu"
	"wasmllm/model"
)

// The encoder ops (model.EncoderOps), run for a backend that has them.

// encoderOps returns b's encoder ops, or fails t.
func encoderOps(t *testing.T, b model.Backend) model.EncoderOps {
	t.Helper()
	ops, ok := b.(model.EncoderOps)
	if !ok {
		t.Fatalf("%T has no EncoderOps", b)
	}
	return ops
}

// seqBatch is a batch of sequences of the lengths lens: each token's
// sequence id and each sequence's [start, end) rows.
func seqBatch(lens ...int) (seq, bounds []int32) {
	for s, n := range lens {
		bounds = append(bounds, int32(len(seq)), int32(len(seq)+n))
		for range n {
			seq = append(seq, int32(s))
		}
	}
	return seq, bounds
}

func testAddBias(t *testing.T, b model.Backend) {
	ops := encoderOps(t, b)
	r := rng(21)
	for _, sh := range [][2]int{{1, 64}, {7, 96}, {33, 300}} {
		T, N := sh[0], sh[1]
		for _, gelu := range []bool{false, true} {
			xv, bias := randF32(r, T*N, 4), randF32(r, N, 1)
			x := input(t, b, xv, T, N)
			ops.AddBias(x, upload(t, b, f32Tensor("bias", bias, N)), gelu)
			want := append([]float32(nil), xv...)
			cpu.AddBias(want, bias, T, N, gelu)
			compare(t, fmt.Sprintf("AddBias T=%d N=%d gelu=%v", T, N, gelu), read(t, b, x, T*N), want, 1e-5)
		}
	}
}

func testLayerNorm(t *testing.T, b model.Backend) {
	ops := encoderOps(t, b)
	r := rng(22)
	for _, sh := range [][2]int{{1, 64}, {5, 96}, {40, 384}} {
		T, D := sh[0], sh[1]
		for _, withAdd := range []bool{false, true} {
			xv, addv := randF32(r, T*D, 3), randF32(r, T*D, 3)
			for i := range xv {
				xv[i] += 5 // a mean far from 0
			}
			wv, bv := randF32(r, D, 1), randF32(r, D, 0.2)
			x := input(t, b, xv, T, D)
			var add model.Tensor
			var addHost []float32
			if withAdd {
				add, addHost = input(t, b, addv, T, D), addv
			}
			ops.LayerNorm(x, add, upload(t, b, f32Tensor("w", wv, D)), upload(t, b, f32Tensor("b", bv, D)), 1e-12)
			want := append([]float32(nil), xv...)
			cpu.LayerNorm(want, addHost, wv, bv, T, D, 1e-12)
			compare(t, fmt.Sprintf("LayerNorm T=%d D=%d add=%v", T, D, withAdd), read(t, b, x, T*D), want, 1e-5)
		}
	}
}

func testRope(t *testing.T, b model.Backend) {
	ops := encoderOps(t, b)
	r := rng(23)
	// nomic-bert's (H = Hk, no norm) and Gemma's (GQA, q/k norm, a row
	// wider than the rotated heads: v follows)
	for _, c := range []struct {
		T, H, Hk, Dh int
		norm         bool
	}{{1, 2, 2, 32, false}, {9, 3, 3, 32, false}, {70, 4, 4, 64, false}, {5, 4, 1, 32, true}, {33, 8, 2, 64, true}} {
		C := (c.H + 2*c.Hk) * c.Dh
		xv := randF32(r, c.T*C, 1)

		pos := make([]int32, c.T)
		for i := range pos {
			pos[i] = int32(i)
			if i >= c.T/2 {
				pos[i] = int32(i - c.T/2)
			}
		}
		spec := model.RopeSpec{Theta: 1000, Dim: c.Dh, NeoX: true}
		rp := &model.RoPE{Dim: c.Dh, NeoX: true, InvFreq: spec.InvFreq()}
		x := input(t, b, xv, c.T, C)
		var qw, kw []float32
		var qt, kt model.Tensor
		if c.norm {
			qw, kw = randF32(r, c.Dh, 1), randF32(r, c.Dh, 1)
			qt, kt = upload(t, b, f32Tensor("qw", qw, c.Dh)), upload(t, b, f32Tensor("kw", kw, c.Dh))
		}
		ops.Rope(x, ids(t, b, pos), qt, kt, c.H, c.Hk, c.Dh, 1e-6, rp)
		want := append([]float32(nil), xv...)
		cpu.Rope(want, pos, qw, kw, C, c.H, c.Hk, c.Dh, 1e-6, true, rp.InvFreq)
		compare(t, fmt.Sprintf("Rope T=%d H=%d Hk=%d Dh=%d norm=%v", c.T, c.H, c.Hk, c.Dh, c.norm), read(t, b, x, c.T*C), want, 1e-5)
	}
}

func testAttendSeq(t *testing.T, b model.Backend, o Options) {
	ops := encoderOps(t, b)
	r := rng(24)
	tol := o.AttentionTol
	if tol == 0 {
		tol = 1e-4
	}
	// MHA (BERT), then GQA with a symmetric window (Gemma's local layers:
	// windows shorter and longer than the sequences, a chunk of 64 keys
	// crossed)
	for _, c := range []struct {
		H, Hk, Dh, radius int
		lens              []int
		causal            bool
	}{{2, 2, 32, 0, []int{1}, false}, {4, 4, 32, 0, []int{12}, false}, {3, 3, 32, 0, []int{5, 1, 17}, false}, {2, 2, 64, 0, []int{64, 3, 40}, false},
		{4, 1, 32, 4, []int{12, 1, 9}, false}, {4, 2, 32, 0, []int{7, 20}, false}, {2, 1, 64, 40, []int{100, 3}, false},
		{4, 2, 32, 0, []int{12, 1, 70}, true}, {2, 1, 32, 7, []int{20, 5}, true}} {
		seq, _ := seqBatch(c.lens...)
		T := len(seq)
		C := (c.H + 2*c.Hk) * c.Dh
		qkv := randF32(r, T*C, 2)
		out := b.NewF32(T, c.H*c.Dh)
		ops.AttendSeq(out, input(t, b, qkv, T, C), ids(t, b, seq), c.H, c.Hk, c.Dh, c.radius, c.causal)
		want := make([]float32, T*c.H*c.Dh)
		cpu.AttendSeq(want, qkv, seq, T, c.H, c.Hk, c.Dh, c.radius, c.causal)
		compare(t, fmt.Sprintf("AttendSeq H=%d Hk=%d Dh=%d radius=%d causal=%v lens=%v", c.H, c.Hk, c.Dh, c.radius, c.causal, c.lens), read(t, b, out, len(want)), want, tol)
	}
}

func testPool(t *testing.T, b model.Backend) {
	ops := encoderOps(t, b)
	r := rng(25)
	for _, lens := range [][]int{{1}, {12}, {5, 1, 64}} {
		_, bounds := seqBatch(lens...)
		T := int(bounds[len(bounds)-1])
		for _, D := range []int{64, 96} {
			xv := randF32(r, T*D, 2)
			for _, mode := range []model.Pooling{model.PoolMean, model.PoolCLS, model.PoolLast} {
				S := len(lens)
				out := b.NewF32(S, D)
				bt := b.NewI32(S, 2)
				b.WriteI32(bt, bounds)
				ops.Pool(out, input(t, b, xv, T, D), bt, mode)
				want := make([]float32, S*D)
				cpu.Pool(want, xv, bounds, D, mode)
				compare(t, fmt.Sprintf("Pool %s lens=%v D=%d", mode, lens, D), read(t, b, out, S*D), want, 1e-5)
			}
		}
	}
}
