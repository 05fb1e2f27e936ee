package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"wasmllm/loader"
	"wasmllm/model"
)

// rankWeight is a random (N, K) weight of type dt for the rank tests.
func rankWeight(t *testing.T, r *rand.Rand, dt loader.DType, N, K int) *loader.Tensor {
	t.Helper()
	wf := make([]float32, N*K)
	for i := range wf {
		wf[i] = float32(r.NormFloat64())
	}
	switch dt {
	case loader.F16:
		data := make([]byte, 2*len(wf))
		for i, f := range wf {
			h := loader.F32ToF16(f)
			data[2*i], data[2*i+1] = byte(h), byte(h>>8)
		}
		return &loader.Tensor{Name: "w", Shape: []int{N, K}, DType: dt, Data: data}
	case loader.Q8, loader.Q4, loader.Q8_0, loader.Q4_0, loader.F32:
		return simdWeight(t, dt, N, K, wf)
	}
	// K-quants: random blocks whose f16 scales are 1/64 (no quantiser here).
	n, err := dt.Size(N * K)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	bb := dt.BlockBytes()
	for b := 0; b < n; b += bb {
		for _, off := range map[loader.DType][]int{loader.Q4_K: {0, 2}, loader.Q6_K: {bb - 2}}[dt] {
			data[b+off], data[b+off+1] = 0x00, 0x24
		}
	}
	return &loader.Tensor{Name: "w", Shape: []int{N, K}, DType: dt, Data: data}
}

// TestRanksSplit splits weights of every type across 2 and 3 ranks, row
// counts that do and do not divide, and checks that the matmul (decode and
// prefill) and the embedding lookup give the bits one rank gives, and that
// rank 0 keeps only its rows.
func TestRanksSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	types := []loader.DType{loader.F32, loader.F16, loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4, loader.Q4_K, loader.Q6_K}
	for _, dt := range types {
		for _, sh := range [][2]int{{100, 256}, {257, 512}, {48, 256}} {
			lw := rankWeight(t, r, dt, sh[0], sh[1])
			for _, ranks := range []int{2, 3} {
				checkRanked(t, r, NewLocalRanks(RankOptions{Ranks: ranks, MinShardBytes: 1}), lw, []int{1, 5, 19}, false)
				checkRanked(t, r, NewLocalRanks(RankOptions{Ranks: ranks, MinShardBytes: 1}), lw, []int{1}, true)
			}
		}
	}
}

// checkRanked uploads lw to b (whose ranks split it; with from, through
// UploadFrom, which must never read more than one rank's rows at a time)
// and to one rank, and compares their matmuls for T tokens and their
// lookups bit for bit.
func checkRanked(t *testing.T, r *rand.Rand, b *Backend, lw *loader.Tensor, Ts []int, from bool) {
	t.Helper()
	N, K := lw.Shape[0], lw.Shape[1]
	one := New(1)
	w1, err := one.Upload(lw)
	if err != nil {
		t.Fatal(err)
	}
	var wn model.Tensor
	if from {
		most := 0
		wn, err = b.UploadFrom(lw.Name, lw.DType, lw.Shape, int64(len(lw.Data)), func(dst []byte, off int64) {
			most = max(most, len(dst))
			copy(dst, lw.Data[off:])
		})
		if share := len(lw.Data)/b.Ranks() + len(lw.Data)/N*16; err == nil && most > share {
			t.Errorf("UploadFrom read %d bytes at once of %d over %d ranks", most, len(lw.Data), b.Ranks())
		}
	} else {
		wn, err = b.Upload(lw)
	}
	if err != nil {
		t.Fatal(err)
	}
	what := fmt.Sprintf("%s N=%d K=%d ranks=%d", lw.DType, N, K, b.Ranks())
	sh := tt(wn).shard
	if sh == nil {
		t.Fatalf("%s: not split", what)
	}
	if rows := len(tt(wn).f) / K; tt(wn).dtype == loader.F32 && rows != sh.bounds[1] {
		t.Errorf("%s: rank 0 holds %d rows, want %d", what, rows, sh.bounds[1])
	}
	for _, T := range Ts {
		x := b.NewF32(T, K)
		xv := make([]float32, T*K)
		for i := range xv {
			xv[i] = float32(r.NormFloat64())
		}
		b.WriteF32(x, xv)
		got, want := b.NewF32(T, N), one.NewF32(T, N)
		b.MatMul(got, x, wn, model.MatMulFusion{})
		one.MatMul(want, x, w1, model.MatMulFusion{})
		sameRows(t, fmt.Sprintf("%s matmul T=%d", what, T), b, got, one, want)
	}
	ids := []int32{0, int32(N - 1), int32(sh.bounds[1]), int32(sh.bounds[1] - 1), int32(N / 2), 7}
	idt := b.NewI32(len(ids))
	b.WriteI32(idt, ids)
	got, want := b.NewF32(len(ids), K), one.NewF32(len(ids), K)
	b.Embed(got, wn, idt)
	one.Embed(want, w1, idt)
	sameRows(t, what+" embed", b, got, one, want)
}

func sameRows(t *testing.T, what string, gb *Backend, got model.Tensor, wb *Backend, want model.Tensor) {
	t.Helper()
	g, w := make([]float32, len(tt(got).f)), make([]float32, len(tt(want).f))
	if err := gb.ReadF32(got, g); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := wb.ReadF32(want, w); err != nil {
		t.Fatal(err)
	}
	for i := range w {
		if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
			t.Fatalf("%s [%d]: %v across ranks, %v on one", what, i, g[i], w[i])
		}
	}
}

// TestRanksFailure: a peer that fails a job ends the op with a RankError
// that the next read returns.
func TestRanksFailure(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	b := NewLocalRanks(RankOptions{Ranks: 2, MinShardBytes: 1})
	w, err := b.Upload(rankWeight(t, r, loader.Q8_0, 64, 64))
	if err != nil {
		t.Fatal(err)
	}
	delete(b.peers.(*localPeers).stores[1].w, tt(w).shard.id) // the peer lost its rows
	x, out := b.NewF32(1, 64), b.NewF32(1, 64)
	b.MatMul(out, x, w, model.MatMulFusion{})
	var re *RankError
	if err := b.ReadF32(out, make([]float32, 64)); !errors.As(err, &re) || re.Rank != 1 {
		t.Fatalf("read after a failed peer: %v, want a RankError of rank 1", err)
	}
}

// tt is the package's t() for tests, whose t is the *testing.T.
func tt(x model.Tensor) *tensor { return x.(*tensor) }
