package model_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/model"
)

const qwen35Dir = "../testdata/qwen35"

func qwen35Model(t *testing.T, name string) *model.Model {
	t.Helper()
	m, err := model.Build(cpu.New(0), loadWeights(t, qwen35Dir+"/models/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func forwardAll(t *testing.T, m *model.Model, cache model.KVCache, ids []int32, pos int) []float32 {
	t.Helper()
	logits, err := m.Forward(cache, ids, pos, true)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(ids)*m.Config.Vocab)
	if err := m.Backend().ReadF32(logits, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQwen35Config reads tiny-qwen35's hybrid keys, and the MTP file's
// trunk: its NextN block is neither a layer nor loaded.
func TestQwen35Config(t *testing.T) {
	L, F := model.LayerLinearAttention, model.LayerFullAttention
	for _, name := range []string{"tiny-qwen35-f32.gguf", "tiny-qwen35-mtp-f32.gguf"} {
		w := loadWeights(t, qwen35Dir+"/models/"+name)
		c := w.Config
		if c.Layers != 4 || !slices.Equal(c.LayerTypes, []string{L, L, L, F}) || c.RopeDim != 16 || !slices.Equal(c.RopeSections, []int{3, 3, 2, 0}) ||
			c.LinearHeadDim != 32 || c.LinearKeyHeads != 2 || c.LinearValueHeads != 4 || c.LinearConvKernel != 4 || !c.AttnOutputGate || !c.TiedEmbeddings {
			t.Errorf("%s: %+v", name, c)
		}
		for n := range w.Tensors {
			if len(n) > 6 && n[:6] == "blk.4." {
				t.Errorf("%s: the NextN block's %s was loaded", name, n)
			}
		}
	}
	moe := loadWeights(t, qwen35Dir+"/models/tiny-qwen35moe-q4_0.gguf").Config
	if moe.Layers != 2 || !slices.Equal(moe.LayerTypes, []string{L, F}) || moe.Experts != 8 || moe.ExpertsUsed != 2 || moe.SharedExpertFFN != 64 || !moe.NormTopK {
		t.Errorf("tiny-qwen35moe: %+v", moe)
	}
}

// TestQwen35MTPTrunk: the MTP file's trunk gives tiny-qwen35-f32's logits
// bit for bit (the same tensors).
func TestQwen35MTPTrunk(t *testing.T) {
	ids := []int32{1, 17, 42, 99, 311, 7, 255, 480, 3, 64, 128, 200}
	var rows [2][]float32
	for i, name := range []string{"tiny-qwen35-f32.gguf", "tiny-qwen35-mtp-f32.gguf"} {
		m := qwen35Model(t, name)
		cache, err := m.NewCache(16)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = forwardAll(t, m, cache, ids, 0)
	}
	if !slices.Equal(rows[0], rows[1]) {
		t.Error("the MTP file's trunk logits differ from tiny-qwen35-f32's")
	}
}

// TestQwen35DecodeEqualsPrefill runs the long golden's 256 tokens one at a
// time (the recurrence) and in uneven batches (chunks of 64 and
// remainders): every golden row matches, and the two runs agree at every
// position.
func TestQwen35DecodeEqualsPrefill(t *testing.T) {
	g := golden.Read(t, qwen35Dir+"/golden/tiny-qwen35-f32.long.golden")
	m := qwen35Model(t, "tiny-qwen35-f32.gguf")
	V := m.Config.Vocab
	run := func(splits []int) []float32 {
		cache, err := m.NewCache(len(g.Tokens))
		if err != nil {
			t.Fatal(err)
		}
		var all []float32
		pos := 0
		for _, n := range splits {
			all = append(all, forwardAll(t, m, cache, g.Tokens[pos:pos+n], pos)...)
			pos += n
		}
		return all
	}
	ones := make([]int, len(g.Tokens))
	for i := range ones {
		ones[i] = 1
	}
	decode, batched := run(ones), run([]int{100, 1, 64, 91})
	worst, drift := 0.0, 0.0
	for r, want := range g.Logits {
		p := g.Position(r)
		for _, got := range [][]float32{decode[p*V : (p+1)*V], batched[p*V : (p+1)*V]} {
			e, i := golden.RowError(got, want)
			worst = math.Max(worst, e)
			if e > g.Tolerance {
				t.Fatalf("row %d: error %.3g at %d: got %v want %v", p, e, i, got[i], want[i])
			}
		}
	}
	for p := range g.Tokens {
		e, _ := golden.RowError(decode[p*V:(p+1)*V], batched[p*V:(p+1)*V])
		drift = math.Max(drift, e)
	}
	t.Logf("worst row error %.3g; decode against batched %.3g", worst, drift)
}

// TestQwen35StatePosition: a recurrent state runs only at its own
// position; ResetState starts over, and SaveState/RestoreState bring a
// checkpoint back with the same logits.
func TestQwen35StatePosition(t *testing.T) {
	m := qwen35Model(t, "tiny-qwen35moe-f32.gguf")
	if !m.Recurrent() {
		t.Fatal("not recurrent")
	}
	cache, err := m.NewCache(32)
	if err != nil {
		t.Fatal(err)
	}
	h := cache.(*model.HybridCache)
	ids := []int32{5, 6, 7, 8, 9}
	first := forwardAll(t, m, cache, ids, 0)
	if h.Len() != 5 {
		t.Fatalf("Len %d after 5 tokens", h.Len())
	}
	var se *model.StateError
	if _, err := m.Forward(cache, ids[:1], 2, false); !errors.As(err, &se) || se.Pos != 2 || se.Len != 5 {
		t.Fatalf("forward at 2 of 5: %v", err)
	}
	ck := m.NewCheckpoint()
	m.SaveState(ck, h)
	next := forwardAll(t, m, cache, []int32{10, 11}, 5)
	m.RestoreState(h, ck)
	if again := forwardAll(t, m, cache, []int32{10, 11}, 5); !slices.Equal(next, again) {
		t.Error("the restored checkpoint gives other logits")
	}
	m.ResetState(cache)
	if again := forwardAll(t, m, cache, ids, 0); !slices.Equal(first, again) {
		t.Error("after ResetState the sequence gives other logits")
	}
}

// TestQwen35Native checks the llama.cpp-native goldens of the quantised
// files loosely (argmax agreement at 75% of the positions, mean |diff|
// within 0.1 of the row's std on average over the rows).
func TestQwen35Native(t *testing.T) {
	files := golden.Files(t, qwen35Dir+"/golden", "quantized-native", false, false)
	if len(files) != 4 {
		t.Fatalf("%d quantized-native goldens, want 4", len(files))
	}
	for _, g := range files {
		t.Run(g.Name, func(t *testing.T) {
			m, err := model.Build(cpu.New(0), loadWeights(t, g.ModelPath()))
			if err != nil {
				t.Fatal(err)
			}
			cache, err := m.NewCache(len(g.Tokens))
			if err != nil {
				t.Fatal(err)
			}
			all := forwardAll(t, m, cache, g.Tokens, 0)
			V, agree := m.Config.Vocab, 0
			var sum, worst float64
			for r, want := range g.Logits {
				same, mean, std := golden.NativeMatch(all[r*V:(r+1)*V], want)
				if same {
					agree++
				}
				sum += mean / std
				worst = max(worst, mean/std)
			}
			// Over the rows: the README measures llama.cpp's own native
			// rows against the exact ones at 0.039 on average for the MoE
			// Q4_0 file, with one row at 0.34 where an expert choice flips.
			if avg := sum / float64(len(g.Logits)); avg > 0.1 {
				t.Errorf("mean |diff| / std %.3g over the rows > 0.1", avg)
			}
			if 4*agree < 3*len(g.Logits) {
				t.Errorf("argmax agrees at %d of %d positions", agree, len(g.Logits))
			}
			t.Logf("argmax agreement %d/%d, mean |diff| / std %.3g on average, %.3g at worst", agree, len(g.Logits), sum/float64(len(g.Logits)), worst)
		})
	}
}
