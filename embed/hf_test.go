package embed_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/embed"
	"wasmllm/internal/testkit/embedgolden"
	"wasmllm/loader"
)

// hfFolder writes tiny-bert-cls-q4_0 as a Hugging Face BertModel folder:
// its tensors exactly dequantised to F32 under transformers' names (with
// the "bert." prefix), config.json, 1_Pooling/config.json (CLS) and a
// WordPiece tokenizer.json of its vocabulary (the GGUF's "▁w" pieces as
// "w", continuations as "##x", as vocab.txt has them).
func hfFolder(t *testing.T) string {
	t.Helper()
	g, err := loader.ReadGGUF(filepath.Join("..", "testdata", "embed", "models", "tiny-bert-cls-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	names := map[string]string{
		"token_embd.weight": "embeddings.word_embeddings.weight", "position_embd.weight": "embeddings.position_embeddings.weight",
		"token_types.weight": "embeddings.token_type_embeddings.weight", "token_embd_norm.weight": "embeddings.LayerNorm.weight",
		"token_embd_norm.bias": "embeddings.LayerNorm.bias",
	}
	layer := map[string]string{
		"attn_q": "attention.self.query", "attn_k": "attention.self.key", "attn_v": "attention.self.value",
		"attn_output": "attention.output.dense", "attn_output_norm": "attention.output.LayerNorm",
		"ffn_up": "intermediate.dense", "ffn_down": "output.dense", "layer_output_norm": "output.LayerNorm",
	}
	for l := 0; l < 2; l++ {
		for k, v := range layer {
			for _, s := range []string{"weight", "bias"} {
				names[fmt.Sprintf("blk.%d.%s.%s", l, k, s)] = fmt.Sprintf("encoder.layer.%d.%s.%s", l, v, s)
			}
		}
	}
	type entry struct {
		DType   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Offsets [2]int `json:"data_offsets"`
	}
	header := map[string]any{}
	var data []byte
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, gn := range keys {
		tt, err := g.Tensor(gn)
		if err != nil {
			t.Fatal(err)
		}
		v, err := tt.F32()
		if err != nil {
			t.Fatal(err)
		}
		start := len(data)
		for _, f := range v {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(f))
		}
		header["bert."+names[gn]] = entry{"F32", tt.Shape, [2]int{start, len(data)}}
	}
	hj, _ := json.Marshal(header)
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	st := binary.LittleEndian.AppendUint64(nil, uint64(len(hj)))
	st = append(append(st, hj...), data...)
	write := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("model.safetensors", st)
	write("config.json", []byte(`{"architectures": ["BertModel"], "model_type": "bert", "vocab_size": 512, "hidden_size": 128,
		"num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 192, "max_position_embeddings": 128,
		"type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu", "position_embedding_type": "absolute"}`))
	write("1_Pooling/config.json", []byte(`{"word_embedding_dimension": 128, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}`))
	write("tokenizer.json", wordPieceJSON(g))
	return dir
}

// wordPieceJSON is a WordPiece tokenizer.json of g's vocabulary (the
// GGUF's "▁w" pieces as "w", continuations as "##x", as vocab.txt has
// them), bert-base-uncased's normalizer, pre-tokenizer and template.
func wordPieceJSON(g *loader.GGUF) []byte {
	tokens, _ := g.Strings("tokenizer.ggml.tokens")
	var vocab []string
	for i, s := range tokens {
		switch {
		case i < 104 || strings.HasPrefix(s, "["):
			vocab = append(vocab, fmt.Sprintf("%q: %d", s, i))
		case strings.HasPrefix(s, "▁"):
			vocab = append(vocab, fmt.Sprintf("%q: %d", strings.TrimPrefix(s, "▁"), i))
		default:
			vocab = append(vocab, fmt.Sprintf("%q: %d", "##"+s, i))
		}
	}
	tok := `{"added_tokens": [` +
		`{"id": 0, "content": "[PAD]", "special": true}, {"id": 100, "content": "[UNK]", "special": true}, {"id": 101, "content": "[CLS]", "special": true},` +
		`{"id": 102, "content": "[SEP]", "special": true}, {"id": 103, "content": "[MASK]", "special": true}],` +
		`"normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},` +
		`"pre_tokenizer": {"type": "BertPreTokenizer"},` +
		`"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],` +
		`"special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [101]}, "[SEP]": {"id": "[SEP]", "ids": [102]}}},` +
		`"decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},` +
		`"model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": {` + strings.Join(vocab, ", ") + `}}}`
	return []byte(tok)
}

// TestHFFolder: a BertModel folder (safetensors, config.json,
// 1_Pooling, tokenizer.json) gives llama.cpp's golden embeddings: the
// exact golden of the Q4_0 file holds for its dequantised weights.
func TestHFFolder(t *testing.T) {
	dir := hfFolder(t)
	m, err := embed.Open(dir, cpu.New(0))
	if err != nil {
		t.Fatal(err)
	}
	g, err := embedgolden.Read(filepath.Join("..", "testdata", "embed", "golden", "tiny-bert-cls-q4_0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Pooling != "cls" || m.Dim != 128 || m.E.MaxTokens() != 128 {
		t.Fatalf("pooling %s, %d dims, %d tokens", m.Pooling, m.Dim, m.E.MaxTokens())
	}
	for i, ids := range g.Inputs {
		in := embed.Tokens(ids)
		if g.AddSpecial[i] {
			got, err := m.Tokenize(g.InputTexts[i], false)
			if err != nil || !slicesEqual(got, ids) {
				t.Fatalf("input %s: tokenizer.json gives %v, llama.cpp %v (%v)", g.InputNames[i], got, ids, err)
			}
			in = embed.Text(g.InputTexts[i])
		}
		res, err := m.Embed([]embed.Input{in}, embed.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e := embedgolden.RelErr(res[0].Embedding, g.Embeddings[i]); e > *g.Tolerance {
			t.Errorf("input %s: rel err %.3g", g.InputNames[i], e)
		}
	}
}

// TestHFFolderErrors: what the encoder cannot run in a BertModel folder is
// an error naming the file and field, never a panic or a silent mismatch.
func TestHFFolderErrors(t *testing.T) {
	for _, c := range []struct {
		file, from, to, want string
	}{
		{"config.json", `"model_type": "bert"`, `"model_type": "roberta"`, "model_type"},
		{"config.json", `"hidden_act": "gelu"`, `"hidden_act": "relu"`, "hidden_act"},
		{"config.json", `"position_embedding_type": "absolute"`, `"position_embedding_type": "relative_key"`, "position_embedding_type"},
		{"config.json", `"num_attention_heads": 4`, `"num_attention_heads": 3`, "num_heads"},
		{"config.json", `"intermediate_size": 192`, `"intermediate_size": 100`, "intermediate"},
		{"1_Pooling/config.json", `"pooling_mode_cls_token": true`, `"pooling_mode_max_tokens": true`, "pooling_mode_max_tokens"},
	} {
		dir := hfFolder(t)
		p := filepath.Join(dir, c.file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.from) {
			t.Fatalf("%s has no %s", c.file, c.from)
		}
		os.WriteFile(p, []byte(strings.Replace(string(b), c.from, c.to, 1)), 0o644)
		if _, err := embed.Open(dir, cpu.New(1)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want an error naming %s", c.file, c.to, err, c.want)
		}
	}
}
