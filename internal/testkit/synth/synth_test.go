package synth

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/tokenizer"
)

// TestPhi3Shape writes a small phi3 model (Phi-4-mini's layout at a
// fraction of its size) and loads it: the config is Phi-4-mini's kind
// (partial rotary, LongRoPE with the attention factor of its contexts,
// tied), the tokenizer is tiny-phi4mini's padded to the vocabulary, and a
// forward on the CPU gives finite logits with either factor set, which
// differ.
func TestPhi3Shape(t *testing.T) {
	s := Shape{Name: "Phi-4-mini (small)", Arch: "phi3", Layers: 2, Hidden: 256, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512,
		Vocab: 1024, DType: loader.Q4_0, Context: 131072, RopeDim: 48, OrigContext: 4096}
	path := filepath.Join(t.TempDir(), "phi3.gguf")
	if err := Write(path, "../../../testdata/phi3/models/tiny-phi4mini-q4_0.gguf", s); err != nil {
		t.Fatal(err)
	}
	g, err := loader.ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	c := w.Config
	if c.Arch != model.ArchPhi3 || c.RopeDim != 48 || !c.TiedEmbeddings || !c.LongRoPE() || c.Vocab != 1024 ||
		c.RopeScaling.OriginalMaxPositionEmbeddings != 4096 || math.Abs(c.RopeScaling.AttentionFactor-1.19024) > 1e-5 {
		t.Fatalf("config %+v, rope scaling %+v", c, c.RopeScaling)
	}
	tok, err := tokenizer.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 1024 {
		t.Errorf("tokenizer of %d tokens", tok.VocabSize())
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode("Once upon a time, there was a little girl named Lily.", false)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[model.LongRoPEMode][]float32{}
	for _, mode := range []model.LongRoPEMode{model.LongRoPEShort, model.LongRoPELong} {
		m.LongRoPE = mode
		cache, err := m.NewCache(len(ids))
		if err != nil {
			t.Fatal(err)
		}
		logits, err := m.Forward(cache, ids, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		row := make([]float32, c.Vocab)
		if err := m.Backend().ReadF32(logits, row); err != nil {
			t.Fatal(err)
		}
		for i, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("mode %d: logit %d is %v", mode, i, v)
			}
		}
		rows[mode] = row
	}
	diff := 0.0
	for i := range rows[model.LongRoPEShort] {
		diff = max(diff, math.Abs(float64(rows[model.LongRoPEShort][i]-rows[model.LongRoPELong][i])))
	}
	if diff < 1e-3 {
		t.Errorf("short and long factors give the same logits (max diff %.3g)", diff)
	}
}

// TestGemma4Shape writes a small gemma4 model (Gemma 4 E2B's layout at a
// fraction of its size: local and global layers of two head dims, the
// last two on earlier KV with twice the FFN, per-layer embeddings) and
// loads it: the config is E2B's kind, and a forward on the CPU gives
// finite logits within the soft-cap.
func TestGemma4Shape(t *testing.T) {
	s := Shape{Name: "Gemma-4-E2B (small)", Arch: "gemma4", Layers: 4, Hidden: 256, Heads: 4, KVHeads: 1, HeadDim: 64,
		GlobalHeadDim: 128, Period: 2, SharedKV: 2, PerLayer: 32, FFN: 256, Vocab: 1024, Window: 8, DType: loader.Q4_0}
	path := filepath.Join(t.TempDir(), "gemma4.gguf")
	if err := Write(path, "../../../testdata/gemma/models/tiny-gemma4-q4_0.gguf", s); err != nil {
		t.Fatal(err)
	}
	g, err := loader.ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	c := w.Config
	if c.Arch != model.ArchGemma4 || c.HeadDim != 128 || c.HeadDimSWA != 64 || c.SharedKVLayers != 2 || c.PerLayerInput != 32 ||
		c.FinalLogitSoftcap != 30 || !c.TiedEmbeddings || c.Vocab != 1024 || c.FFN != 512 || len(c.LayerFFN) != 4 || c.LayerFFN[1] != 256 {
		t.Fatalf("config %+v", c)
	}
	specs := c.Specs()
	for l, want := range []struct {
		hd     int
		shares bool
	}{{64, false}, {128, false}, {64, true}, {128, true}} {
		if a := specs[l].Attention; a.HeadDim != want.hd || a.SharesKV != want.shares {
			t.Errorf("layer %d: head dim %d, shares KV %v; want %d, %v", l, a.HeadDim, a.SharesKV, want.hd, want.shares)
		}
	}
	tok, err := tokenizer.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode("Once upon a time, there was a little girl named Lily.", true)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := m.NewCache(len(ids))
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Forward(cache, ids, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float32, c.Vocab)
	if err := m.Backend().ReadF32(logits, row); err != nil {
		t.Fatal(err)
	}
	spread := 0.0
	for i, v := range row {
		if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 30 {
			t.Fatalf("logit %d is %v", i, v)
		}
		spread = max(spread, math.Abs(float64(v-row[0])))
	}
	if spread < 1e-2 {
		t.Errorf("logits all alike (spread %.3g)", spread)
	}
}

// TestQ4KMMix writes an 8-layer Llama in the Q4_K_M mix: attn_v and
// ffn_down are Q6_K on llama.cpp's "more bits" layers (0, 3, 6, 7 of 8),
// the tied head Q6_K, the rest Q4_K; loaded, the merged q/k/v of those
// layers keeps its Q4_K and Q6_K rows as two blocks, and a forward on the
// CPU gives finite logits.
func TestQ4KMMix(t *testing.T) {
	s := Shape{Name: "Llama (small)", Arch: "llama", Layers: 8, Hidden: 256, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512,
		Vocab: 1024, DType: loader.Q4_K, Mix: MixQ4KM}
	path := filepath.Join(t.TempDir(), "q4km.gguf")
	if err := Write(path, "../../../testdata/models/tiny-llama3-q4_0.gguf", s); err != nil {
		t.Fatal(err)
	}
	g, err := loader.ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	more := map[int]bool{0: true, 3: true, 6: true, 7: true}
	for _, ti := range g.Tensors {
		want := loader.Q4_K
		var l int
		switch {
		case len(ti.Shape) < 2:
			continue
		case ti.Name == "token_embd.weight":
			want = loader.Q6_K
		case strings.HasSuffix(ti.Name, "attn_v.weight") || strings.HasSuffix(ti.Name, "ffn_down.weight"):
			if _, err := fmt.Sscanf(ti.Name, "blk.%d.", &l); err == nil && more[l] {
				want = loader.Q6_K
			}
		}
		if ti.DType != want {
			t.Errorf("%s is %s, want %s", ti.Name, ti.DType, want)
		}
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	for l := range s.Layers {
		qkv := w.Tensors[fmt.Sprintf(model.NameQKV, l)]
		if mixed := qkv.DType == loader.Mixed; mixed != more[l] {
			t.Errorf("layer %d: attn_qkv %s, want mixed %v", l, qkv.DType, more[l])
		}
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int32{1, 50, 300, 7}
	cache, _ := m.NewCache(len(ids))
	out, err := m.Forward(cache, ids, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, s.Vocab)
	if err := m.Backend().ReadF32(out, logits); err != nil {
		t.Fatal(err)
	}
	for i, v := range logits {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %d is %v", i, v)
		}
	}
}
