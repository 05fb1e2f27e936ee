package model_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/embedgolden"
	"wasmllm/internal/testkit/fixtures"
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

// gemmaEmbedHF writes tiny-gemma-embedding-q4_0 as a Hugging Face
// EmbeddingGemma folder, as the real one is laid out: the trunk's tensors
// exactly dequantised to F32 under Gemma3TextModel's names with the norms
// as Hugging Face stores them (the GGUF's minus 1), config.json
// (gemma3_text), 1_Pooling (mean) and the Dense modules 2_Dense and
// 3_Dense (linear.weight).
func gemmaEmbedHF(t *testing.T) string {
	t.Helper()
	g, err := loader.ReadGGUF(filepath.Join("..", "testdata", "embed", "models", "tiny-gemma-embedding-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	layer := map[string]string{"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
		"attn_v": "self_attn.v_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm", "attn_output": "self_attn.o_proj",
		"post_attention_norm": "post_attention_layernorm", "ffn_norm": "pre_feedforward_layernorm", "post_ffw_norm": "post_feedforward_layernorm",
		"ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
	dir := t.TempDir()
	var trunk []*loader.Tensor
	dense := map[string][]*loader.Tensor{}
	for i := range g.Tensors {
		tt := g.TensorAt(i)
		v, err := tt.F32()
		if err != nil {
			t.Fatal(err)
		}
		var name string
		switch tt.Name {
		case "token_embd.weight":
			name = "embed_tokens.weight"
		case "output_norm.weight":
			name = "norm.weight"
		case "dense_2.weight", "dense_3.weight":
			dense[strings.TrimSuffix(tt.Name, ".weight")] = []*loader.Tensor{f32Tensor("linear.weight", tt.Shape, v)}
			continue
		default:
			var l int
			var rest string
			if _, err := fmt.Sscanf(tt.Name, "blk.%d.%s", &l, &rest); err != nil || layer[strings.TrimSuffix(rest, ".weight")] == "" {
				t.Fatalf("tensor %s: no Hugging Face name", tt.Name)
			}
			name = fmt.Sprintf("layers.%d.%s.weight", l, layer[strings.TrimSuffix(rest, ".weight")])
		}
		if strings.HasSuffix(tt.Name, "norm.weight") {
			for j := range v {
				v[j]-- // Hugging Face stores w; Gemma's RMSNorm scales by 1 + w
			}
		}
		trunk = append(trunk, f32Tensor(name, tt.Shape, v))
	}
	writeST := func(sub string, ts []*loader.Tensor) {
		var buf bytes.Buffer
		if err := fixtures.WriteSafetensors(&buf, ts, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, sub, "model.safetensors"), buf.Bytes())
	}
	writeST("", trunk)
	writeST("2_Dense", dense["dense_2"])
	writeST("3_Dense", dense["dense_3"])
	ctx, _ := g.Int("gemma-embedding.context_length")
	writeTestFile(t, filepath.Join(dir, "config.json"), []byte(fmt.Sprintf(`{"architectures": ["Gemma3TextModel"], "model_type": "gemma3_text",
		"vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32,
		"intermediate_size": 96, "max_position_embeddings": %d, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
		"sliding_window": 8, "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
		"hidden_activation": "gelu_pytorch_tanh", "use_bidirectional_attention": true, "query_pre_attn_scalar": 32,
		"final_logit_softcapping": null, "attn_logit_softcapping": null, "rope_scaling": null}`, ctx)))
	writeTestFile(t, filepath.Join(dir, "1_Pooling", "config.json"), []byte(`{"word_embedding_dimension": 64, "pooling_mode_mean_tokens": true}`))
	return dir
}

func f32Tensor(name string, shape []int, v []float32) *loader.Tensor {
	data := make([]byte, 0, 4*len(v))
	for _, f := range v {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(f))
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: shape, Data: data}
}

func writeTestFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGemmaEmbeddingHF: an EmbeddingGemma folder (Gemma3TextModel's names,
// norms + 1 on load, the Dense modules, mean pooling) gives llama.cpp's
// golden embeddings of the GGUF it was made from; what the row cannot run
// in its config.json is an error naming the field.
func TestGemmaEmbeddingHF(t *testing.T) {
	dir := gemmaEmbedHF(t)
	w, err := model.EncoderFromHF(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w.Config.Arch != model.ArchGemmaEmbedding || w.Config.DenseDim != 256 || w.Config.Pooling != model.PoolMean || !w.Config.Local(4) || w.Config.Local(5) {
		t.Fatalf("config %+v", w.Config)
	}
	e, err := model.BuildEncoder(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	g, err := embedgolden.Read(filepath.Join("..", "testdata", "embed", "golden", "tiny-gemma-embedding-q4_0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	worst := embedgolden.Check(t, g, embedgolden.Embedder{Embed: e.Embed, Hidden: e.Hidden, Normalize: model.Normalize}, 1)
	t.Logf("worst %.3g", worst)
	for _, c := range []struct{ from, to, want string }{
		{`"hidden_activation": "gelu_pytorch_tanh"`, `"hidden_activation": "silu"`, "hidden_activation"},
		{`"use_bidirectional_attention": true`, `"use_bidirectional_attention": false`, "use_bidirectional_attention"},
		{`"final_logit_softcapping": null`, `"final_logit_softcapping": 30`, "final_logit_softcapping"},
		{`"full_attention"]`, `"sliding_attention"]`, "layer_types"},
		{`"num_key_value_heads": 1`, `"num_key_value_heads": 3`, "num_key_value_heads"},
	} {
		bad := gemmaEmbedHF(t)
		p := filepath.Join(bad, "config.json")
		b, _ := os.ReadFile(p)
		if !strings.Contains(string(b), c.from) {
			t.Fatalf("config.json has no %s", c.from)
		}
		os.WriteFile(p, []byte(strings.Replace(string(b), c.from, c.to, 1)), 0o644)
		if _, err := model.EncoderFromHF(bad); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.to, err, c.want)
		}
	}
}
