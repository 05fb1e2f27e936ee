package model_test

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
)

func mtpModel(t *testing.T, b model.Backend) *model.Model {
	t.Helper()
	g, err := loader.ReadGGUF(qwen35Dir + "/models/tiny-qwen35-mtp-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUFOptions(g, model.LoadOptions{MTP: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(b, w)
	if err != nil {
		t.Fatal(err)
	}
	if m.MTP == nil || len(m.Layers) != 4 {
		t.Fatalf("MTP %v, %d trunk layers", m.MTP != nil, len(m.Layers))
	}
	return m
}

func readRows(t *testing.T, b model.Backend, x model.Tensor) []float32 {
	t.Helper()
	sh := x.Shape()
	out := make([]float32, sh[0]*sh[1])
	if err := b.ReadF32(x, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQwen35MTPGolden checks the NextN/MTP block against llama.cpp's
// draft-mtp run: the trunk's logits and output_norm-ed hidden rows, the
// block over the prompt (token k with the trunk's hidden k-1, zeros for
// k = 0), and the 4-step greedy draft chain (each step's logits, hidden
// and drafted id), on one rank and on two.
func TestQwen35MTPGolden(t *testing.T) {
	g := golden.ReadMTP(t, qwen35Dir+"/golden/tiny-qwen35-mtp-f32.mtpgolden")
	for _, b := range []struct {
		name string
		b    model.Backend
	}{{"cpu", cpu.New(0)}, {"ranks=2", cpu.NewLocalRanks(cpu.RankOptions{Ranks: 2, MinShardBytes: 1})}} {
		t.Run(b.name, func(t *testing.T) { checkMTPGolden(t, mtpModel(t, b.b), g) })
	}
}

func checkMTPGolden(t *testing.T, m *model.Model, g *golden.MTPFile) {
	b := m.Backend()
	V, D, n := m.Config.Vocab, m.Config.Hidden, len(g.Tokens)
	worst := 0.0
	check := func(what string, got, want []float32) {
		t.Helper()
		e, i := golden.RowError(got, want)
		worst = math.Max(worst, e)
		if e > g.Tolerance {
			t.Errorf("%s: error %.3g > %.3g at %d: got %v want %v", what, e, g.Tolerance, i, got[i], want[i])
		}
	}
	cache, err := m.NewCache(n + 8)
	if err != nil {
		t.Fatal(err)
	}
	logitsT, hiddenT, err := m.ForwardHidden(cache, g.Tokens, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	logits, hidden := readRows(t, b, logitsT), readRows(t, b, hiddenT)
	for k := range n {
		check("main logits row "+strconv.Itoa(k), logits[k*V:(k+1)*V], g.Main.Logits[k])
		check("main h_nextn row "+strconv.Itoa(k), hidden[k*D:(k+1)*D], g.Main.Hidden[k])
	}
	// The block over the prompt: row k gets the trunk's hidden k-1.
	shifted := make([]float32, n*D)
	copy(shifted[D:], hidden[:(n-1)*D])
	hin := b.NewF32(n, D)
	b.WriteF32(hin, shifted)
	mcache, err := m.MTP.NewCache(n + 8)
	if err != nil {
		t.Fatal(err)
	}
	mlT, mhT, err := m.MTP.Forward(mcache, g.Tokens, hin, 0)
	if err != nil {
		t.Fatal(err)
	}
	ml, mh := readRows(t, b, mlT), readRows(t, b, mhT)
	for k := range n {
		check("mtp logits row "+strconv.Itoa(k), ml[k*V:(k+1)*V], g.MTP.Logits[k])
		check("mtp h_nextn row "+strconv.Itoa(k), mh[k*D:(k+1)*D], g.MTP.Hidden[k])
	}
	// The draft chain: step 0 feeds id_last with the trunk's last hidden,
	// step s the step s-1 draft with that step's h'.
	if id := golden.Argmax(logits[(n-1)*V:]); id != g.Draft.IDLast {
		t.Fatalf("id_last %d, want %d", id, g.Draft.IDLast)
	}
	h1 := b.NewF32(1, D)
	b.WriteF32(h1, hidden[(n-1)*D:])
	var drafted []int32
	for s, step := range g.Draft.Steps {
		if s > 0 && step.Token != drafted[s-1] {
			t.Fatalf("step %d feeds %d, the golden's draft was %d", s, step.Token, drafted[s-1])
		}
		lT, hT, err := m.MTP.Forward(mcache, []int32{step.Token}, h1, step.Pos)
		if err != nil {
			t.Fatal(err)
		}
		l, h := readRows(t, b, lT), readRows(t, b, hT)
		check("draft step "+strconv.Itoa(s)+" logits", l, step.Logits)
		check("draft step "+strconv.Itoa(s)+" h_nextn", h, step.Hidden)
		drafted = append(drafted, golden.Argmax(l))
		b.WriteF32(h1, h)
	}
	if !slices.Equal(drafted, g.Draft.Drafted) {
		t.Errorf("drafted %v, want %v", drafted, g.Draft.Drafted)
	}
	t.Logf("worst row error %.3g (tolerance %.3g); drafted %v", worst, g.Tolerance, drafted)
}
