package model_test

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/embedgolden"
	"wasmllm/internal/testkit/shareddata"
	"wasmllm/loader"
	"wasmllm/model"
)

func loadEncoder(t *testing.T, path string) *model.Encoder {
	t.Helper()
	g, err := loader.ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.EncoderFromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	e, err := model.BuildEncoder(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func checkEncoderGolden(t *testing.T, modelPath, goldenPath string) {
	g, err := embedgolden.Read(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	e := loadEncoder(t, modelPath)
	if string(e.Config.Pooling) != g.Pooling || e.Config.Hidden != g.NEmbdOut {
		t.Fatalf("pooling %s hidden %d, golden %s %d", e.Config.Pooling, e.Config.Hidden, g.Pooling, g.NEmbdOut)
	}
	worst := embedgolden.Check(t, g, embedgolden.Embedder{Embed: e.Embed, Hidden: e.Hidden, Normalize: model.Normalize}, 1)
	t.Logf("%s (%s): worst %.3g", filepath.Base(modelPath), g.Kind, worst)
}

// TestEncoderGolden runs the vendored tiny BERT model (CLS pooling),
// tiny nomic-bert (mean pooling, rotary, SwiGLU) and tiny EmbeddingGemma
// (gemma3 layers run bidirectionally, GQA, local layers with a symmetric
// window, mean pooling then two dense projections), Q4_0 with a Q8_0 token
// table, on the CPU backend against
// llama.cpp's exact goldens: every pooled vector before and after L2
// normalisation for 1, 12 and 64 tokens and a batch of three inputs of
// different lengths run together, and the per-token hidden rows.
func TestEncoderGolden(t *testing.T) {
	for _, name := range []string{"tiny-bert-cls-q4_0", "tiny-nomic-bert-q4_0", "tiny-gemma-embedding-q4_0"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "embed")
			checkEncoderGolden(t, filepath.Join(dir, "models", name+".gguf"), filepath.Join(dir, "golden", name+".json.gz"))
		})
	}
}

// TestEncoderGoldenShared runs every shared encoder golden (exact and
// llama.cpp-native, F32/F16/Q8_0/Q4_0) under WASMLLM_EXTENDED.
func TestEncoderGoldenShared(t *testing.T) {
	dir := shareddata.Dir(t, "testdata-embed")
	files, err := filepath.Glob(filepath.Join(dir, "golden", "tiny-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".json")
		modelName := strings.TrimSuffix(base, ".llamacpp-native")
		switch {
		case strings.HasPrefix(modelName, "tiny-bert"), strings.HasPrefix(modelName, "tiny-nomic-bert"), strings.HasPrefix(modelName, "tiny-gemma-embedding"):
			t.Run(base, func(t *testing.T) {
				checkEncoderGolden(t, filepath.Join(dir, "models", modelName+".gguf"), f)
			})
		case strings.HasPrefix(modelName, "tiny-qwen3-embed"):
			t.Run(base, func(t *testing.T) {
				checkDecoderEmbedGolden(t, filepath.Join(dir, "models", modelName+".gguf"), f)
			})
		}
	}
}

// TestEncoderInputErrors: an empty input, one over the model's length and
// a token outside the vocabulary are *model.InputError naming the input;
// the too-long one wraps ErrInputTooLong.
func TestEncoderInputErrors(t *testing.T) {
	e := loadEncoder(t, filepath.Join("..", "testdata", "embed", "models", "tiny-bert-cls-q4_0.gguf"))
	long := make([]int32, e.MaxTokens()+1)
	for _, c := range []struct {
		name    string
		seqs    [][]int32
		index   int
		tooLong bool
	}{
		{"empty", [][]int32{{101, 102}, {}}, 1, false},
		{"too long", [][]int32{long}, 0, true},
		{"bad id", [][]int32{{101, 9999, 102}}, 0, false},
	} {
		_, err := e.Embed(c.seqs)
		var ie *model.InputError
		if !errors.As(err, &ie) || ie.Index != c.index || errors.Is(err, model.ErrInputTooLong) != c.tooLong {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, err := e.Embed(nil); err == nil {
		t.Error("no inputs: no error")
	}
	if _, err := e.Embed([][]int32{long[:e.MaxTokens()]}); err != nil {
		t.Errorf("an input of exactly %d tokens: %v", e.MaxTokens(), err)
	}
}

// TestTruncate: Matryoshka dimensions keep the first values, renormalised.
func TestTruncate(t *testing.T) {
	v := []float32{3, 4, 12}
	got := model.Truncate(v, 2)
	if len(got) != 2 || math.Abs(float64(got[0])-0.6) > 1e-7 || math.Abs(float64(got[1])-0.8) > 1e-7 {
		t.Errorf("Truncate(%v, 2) = %v", v, got)
	}
	if got := model.Truncate(v, 0); len(got) != 3 || math.Abs(float64(got[2])-12.0/13) > 1e-7 {
		t.Errorf("Truncate(%v, 0) = %v", v, got)
	}
	if got := model.Normalize([]float32{0, 0}); got[0] != 0 || got[1] != 0 {
		t.Errorf("Normalize(0) = %v", got)
	}
}

func checkDecoderEmbedGolden(t *testing.T, modelPath, goldenPath string) {
	g, err := embedgolden.Read(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	gg, err := loader.ReadGGUF(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	pool, ok, err := model.DecoderPooling(gg)
	if err != nil || !ok || string(pool) != g.Pooling {
		t.Fatalf("pooling %q %v %v, golden %s", pool, ok, err, g.Pooling)
	}
	w, err := model.FromGGUF(gg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	d := &model.DecoderEmbedder{M: m, Pooling: pool}
	worst := embedgolden.Check(t, g, embedgolden.Embedder{Embed: d.Embed, Hidden: d.Hidden, Normalize: model.Normalize}, 1)
	t.Logf("%s (%s): worst %.3g", filepath.Base(modelPath), g.Kind, worst)
}

// TestDecoderEmbedGolden runs the vendored tiny Qwen3-Embedding (`qwen3`,
// last-token pooling, causal, Q4_0) on the CPU backend against llama.cpp's
// exact golden: pooled and normalised vectors and per-token rows.
func TestDecoderEmbedGolden(t *testing.T) {
	dir := filepath.Join("..", "testdata", "embed")
	checkDecoderEmbedGolden(t, filepath.Join(dir, "models", "tiny-qwen3-embed-q4_0.gguf"), filepath.Join(dir, "golden", "tiny-qwen3-embed-q4_0.json.gz"))
}

// TestDecoderEmbedBatch: Qwen3-Embedding's batch of three inputs of
// different lengths runs as one pass (each causal within its own
// sequence) on the CPU backend, and equals the inputs run one after
// another through Forward and a KV cache, and llama.cpp's golden.
func TestDecoderEmbedBatch(t *testing.T) {
	dir := filepath.Join("..", "testdata", "embed")
	g, err := embedgolden.Read(filepath.Join(dir, "golden", "tiny-qwen3-embed-q4_0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	gg, err := loader.ReadGGUF(filepath.Join(dir, "models", "tiny-qwen3-embed-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUF(gg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	batch := &model.DecoderEmbedder{M: m, Pooling: model.PoolLast}
	seq := &model.DecoderEmbedder{M: m, Pooling: model.PoolLast, Sequential: true}
	if !batch.Batched() || seq.Batched() {
		t.Fatalf("Batched: %v, %v", batch.Batched(), seq.Batched())
	}
	inputs := g.Inputs // one, short12, long64, batch_a, batch_b, batch_c: 1..64 tokens
	got, err := batch.Embed(inputs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := seq.Embed(inputs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range inputs {
		if d := embedgolden.RelErr(got[i], want[i]); d > 1e-5 {
			t.Errorf("input %d (%d tokens): batch vs one by one: rel err %.3g", i, len(inputs[i]), d)
		}
		if d := embedgolden.RelErr(got[i], g.Embeddings[i]); d > *g.Tolerance {
			t.Errorf("input %d: vs llama.cpp: rel err %.3g", i, d)
		}
	}
}

// TestEncoderHostileGGUF: a bert GGUF with keys missing or out of range, or
// a tensor of the wrong shape, is a *loader.FormatError or *ConfigError
// naming it, never a panic.
func TestEncoderHostileGGUF(t *testing.T) {
	path := filepath.Join("..", "testdata", "embed", "models", "tiny-bert-cls-q4_0.gguf")
	for _, c := range []struct {
		name string
		edit func(g *loader.GGUF)
		want string
	}{
		{"no block_count", func(g *loader.GGUF) { delete(g.Meta, "bert.block_count") }, "bert.block_count"},
		{"zero heads", func(g *loader.GGUF) { g.Meta["bert.attention.head_count"] = uint32(0) }, "bert.attention.head_count"},
		{"heads not dividing", func(g *loader.GGUF) { g.Meta["bert.attention.head_count"] = uint32(3) }, "num_heads"},
		{"gqa", func(g *loader.GGUF) { g.Meta["bert.attention.head_count_kv"] = uint32(2) }, "head_count_kv"},
		{"pooling 7", func(g *loader.GGUF) { g.Meta["bert.pooling_type"] = uint32(7) }, "pooling_type"},
		{"eps NaN", func(g *loader.GGUF) { g.Meta["bert.attention.layer_norm_epsilon"] = float32(math.NaN()) }, "layer_norm_eps"},
		{"more layers than tensors", func(g *loader.GGUF) { g.Meta["bert.block_count"] = uint32(3) }, "blk.2"},
		{"wider than its tensors", func(g *loader.GGUF) { g.Meta["bert.embedding_length"] = uint32(256) }, "tensor"},
		{"short position table", func(g *loader.GGUF) { g.Meta["bert.context_length"] = uint32(4096) }, "position_embd"},
		{"not an encoder", func(g *loader.GGUF) { g.Meta["general.architecture"] = "llama" }, "architecture"},
	} {
		g, err := loader.ReadGGUF(path)
		if err != nil {
			t.Fatal(err)
		}
		c.edit(g)
		_, err = model.EncoderFromGGUF(g)
		var fe *loader.FormatError
		var ce *model.ConfigError
		if err == nil || !(errors.As(err, &fe) || errors.As(err, &ce)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a FormatError or ConfigError naming %s", c.name, err, c.want)
		}
	}
}
