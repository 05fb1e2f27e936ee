package embed_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/embed"
	"wasmllm/internal/testkit/embedgolden"
	"wasmllm/internal/testkit/fixtures"
	"wasmllm/loader"
)

// qwen3EmbedHF writes tiny-qwen3-embed-q4_0 as a Hugging Face
// Qwen3-Embedding folder, as the real one is laid out: the tensors exactly
// dequantised to F32 under the bare Qwen3Model's names (no "model."
// prefix, no lm_head: tied), config.json, 1_Pooling/config.json
// (last token), and the vocab's tokenizer.json (tiny-qwen2's, the same
// 512 tokens) with Qwen3-Embedding's post-processor appending
// <|endoftext|>.
func qwen3EmbedHF(t *testing.T) string {
	t.Helper()
	g, err := loader.ReadGGUF(filepath.Join("..", "testdata", "embed", "models", "tiny-qwen3-embed-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	layer := map[string]string{
		"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
		"attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
		"ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
	}
	var ts []*loader.Tensor
	for i := range g.Tensors {
		tt := g.TensorAt(i)
		var name string
		switch tt.Name {
		case "token_embd.weight":
			name = "embed_tokens.weight"
		case "output_norm.weight":
			name = "norm.weight"
		default:
			var l int
			var rest string
			if _, err := fmt.Sscanf(tt.Name, "blk.%d.%s", &l, &rest); err != nil {
				t.Fatalf("tensor %s", tt.Name)
			}
			base := strings.TrimSuffix(rest, ".weight")
			hf, ok := layer[base]
			if !ok {
				t.Fatalf("tensor %s: no Hugging Face name", tt.Name)
			}
			name = fmt.Sprintf("layers.%d.%s.weight", l, hf)
		}
		v, err := tt.F32()
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 0, 4*len(v))
		for _, f := range v {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(f))
		}
		ts = append(ts, &loader.Tensor{Name: name, DType: loader.F32, Shape: tt.Shape, Data: data})
	}
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := fixtures.WriteSafetensors(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("model.safetensors", buf.Bytes())
	ctx, _ := g.Int("qwen3.context_length")
	eps, _ := g.Float("qwen3.attention.layer_norm_rms_epsilon")
	write("config.json", []byte(fmt.Sprintf(`{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 512,
		"hidden_size": 128, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
		"head_dim": 32, "rms_norm_eps": %g, "rope_theta": 1000000, "max_position_embeddings": %d, "tie_word_embeddings": true,
		"hidden_act": "silu", "torch_dtype": "float32"}`, eps, ctx)))
	write("1_Pooling/config.json", []byte(`{"word_embedding_dimension": 128, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": false, "pooling_mode_lasttoken": true}`))
	tj, err := os.ReadFile(filepath.Join("..", "testdata", "qwen2", "hf", "tiny-qwen2", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tok map[string]any
	if err := json.Unmarshal(tj, &tok); err != nil {
		t.Fatal(err)
	}
	tok["post_processor"] = map[string]any{"type": "Sequence", "processors": []any{
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"SpecialToken": map[string]any{"id": "<|endoftext|>", "type_id": 0}}},
			"pair":           []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}, map[string]any{"SpecialToken": map[string]any{"id": "<|endoftext|>", "type_id": 1}}},
			"special_tokens": map[string]any{"<|endoftext|>": map[string]any{"id": "<|endoftext|>", "ids": []int{509}, "tokens": []string{"<|endoftext|>"}}}},
	}}
	tj, _ = json.Marshal(tok)
	write("tokenizer.json", tj)
	return dir
}

// TestHFFolderQwen3Embedding: a Qwen3-Embedding folder (the bare
// Qwen3Model's tensor names through the one Hugging Face table, the
// pooling from 1_Pooling, the tokenizer.json's template appending
// <|endoftext|>) gives llama.cpp's golden embeddings of the GGUF it was
// made from, texts tokenized as llama.cpp tokenized them, in one batch.
func TestHFFolderQwen3Embedding(t *testing.T) {
	m, err := embed.Open(qwen3EmbedHF(t), cpu.New(0))
	if err != nil {
		t.Fatal(err)
	}
	g, err := embedgolden.Read(filepath.Join("..", "testdata", "embed", "golden", "tiny-qwen3-embed-q4_0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Pooling != "last" || m.Dim != 128 || m.Arch != "qwen3" {
		t.Fatalf("pooling %s, %d dims, arch %s", m.Pooling, m.Dim, m.Arch)
	}
	var inputs []embed.Input
	for i, ids := range g.Inputs {
		in := embed.Tokens(ids)
		if g.AddSpecial[i] {
			got, err := m.Tokenize(g.InputTexts[i], false)
			if err != nil || !slicesEqual(got, ids) {
				t.Fatalf("input %s: tokenizer.json gives %v, llama.cpp %v (%v)", g.InputNames[i], got, ids, err)
			}
			in = embed.Text(g.InputTexts[i])
		}
		inputs = append(inputs, in)
	}
	res, err := m.Embed(inputs, embed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if e := embedgolden.RelErr(r.Embedding, g.Embeddings[i]); e > *g.Tolerance {
			t.Errorf("input %s: rel err %.3g", g.InputNames[i], e)
		}
		if e := embedgolden.RelErr(r.Normalized, g.EmbeddingsNormalized[i]); e > *g.Tolerance {
			t.Errorf("input %s normalised: rel err %.3g", g.InputNames[i], e)
		}
	}
}

// nomicHF writes tiny-nomic-bert-q4_0 as a Hugging Face NomicBertModel
// folder (nomic-embed-text's layout): the tensors exactly dequantised to
// F32 under nomic's names (attn.Wqkv, mlp.fc11 = up, mlp.fc12 = gate,
// norm1/norm2, emb_ln), config.json of model_type nomic_bert,
// 1_Pooling/config.json (mean) and the vocab's WordPiece tokenizer.json.
func nomicHF(t *testing.T) string {
	t.Helper()
	g, err := loader.ReadGGUF(filepath.Join("..", "testdata", "embed", "models", "tiny-nomic-bert-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	global := map[string]string{"token_embd.weight": "embeddings.word_embeddings.weight", "token_types.weight": "embeddings.token_type_embeddings.weight",
		"token_embd_norm.weight": "emb_ln.weight", "token_embd_norm.bias": "emb_ln.bias"}
	layer := map[string]string{"attn_qkv.weight": "attn.Wqkv.weight", "attn_output.weight": "attn.out_proj.weight",
		"attn_output_norm.weight": "norm1.weight", "attn_output_norm.bias": "norm1.bias", "ffn_up.weight": "mlp.fc11.weight",
		"ffn_gate.weight": "mlp.fc12.weight", "ffn_down.weight": "mlp.fc2.weight", "layer_output_norm.weight": "norm2.weight",
		"layer_output_norm.bias": "norm2.bias"}
	var ts []*loader.Tensor
	for i := range g.Tensors {
		tt := g.TensorAt(i)
		name, ok := global[tt.Name]
		if !ok {
			var l int
			var rest string
			if _, err := fmt.Sscanf(tt.Name, "blk.%d.%s", &l, &rest); err != nil || layer[rest] == "" {
				t.Fatalf("tensor %s: no Hugging Face name", tt.Name)
			}
			name = fmt.Sprintf("encoder.layers.%d.%s", l, layer[rest])
		}
		ts = append(ts, f32Copy(t, tt, name))
	}
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := fixtures.WriteSafetensors(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "model.safetensors", buf.Bytes())
	eps, _ := g.Float("nomic-bert.attention.layer_norm_epsilon")
	theta, _ := g.Float("nomic-bert.rope.freq_base")
	ctx, _ := g.Int("nomic-bert.context_length")
	writeFile(t, dir, "config.json", []byte(fmt.Sprintf(`{"architectures": ["NomicBertModel"], "model_type": "nomic_bert", "vocab_size": 512,
		"n_embd": 96, "n_layer": 2, "n_head": 3, "n_inner": 192, "n_positions": %d, "type_vocab_size": 2, "layer_norm_epsilon": %g,
		"rotary_emb_base": %g, "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": false, "activation_function": "swiglu",
		"qkv_proj_bias": false, "mlp_fc1_bias": false, "mlp_fc2_bias": false, "prenorm": false, "causal": false}`, ctx, eps, theta)))
	writeFile(t, dir, "1_Pooling/config.json", []byte(`{"word_embedding_dimension": 96, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true}`))
	writeFile(t, dir, "tokenizer.json", wordPieceJSON(g))
	return dir
}

func f32Copy(t *testing.T, tt *loader.Tensor, name string) *loader.Tensor {
	v, err := tt.F32()
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 0, 4*len(v))
	for _, f := range v {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(f))
	}
	return &loader.Tensor{Name: name, DType: loader.F32, Shape: tt.Shape, Data: data}
}

func writeFile(t *testing.T, dir, name string, b []byte) {
	p := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHFFolderNomic: a NomicBertModel folder (nomic's tensor names as
// llama.cpp's converter maps them, rotary base from rotary_emb_base,
// mean pooling from 1_Pooling) gives llama.cpp's golden embeddings of the
// GGUF it was made from, and what the nomic-bert row cannot run in its
// config.json is an error naming the field.
func TestHFFolderNomic(t *testing.T) {
	dir := nomicHF(t)
	m, err := embed.Open(dir, cpu.New(0))
	if err != nil {
		t.Fatal(err)
	}
	g, err := embedgolden.Read(filepath.Join("..", "testdata", "embed", "golden", "tiny-nomic-bert-q4_0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Pooling != "mean" || m.Dim != 96 || m.Arch != "nomic-bert" {
		t.Fatalf("pooling %s, %d dims, arch %s", m.Pooling, m.Dim, m.Arch)
	}
	var inputs []embed.Input
	for i, ids := range g.Inputs {
		in := embed.Tokens(ids)
		if g.AddSpecial[i] {
			got, err := m.Tokenize(g.InputTexts[i], false)
			if err != nil || !slicesEqual(got, ids) {
				t.Fatalf("input %s: tokenizer.json gives %v, llama.cpp %v (%v)", g.InputNames[i], got, ids, err)
			}
			in = embed.Text(g.InputTexts[i])
		}
		inputs = append(inputs, in)
	}
	res, err := m.Embed(inputs, embed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if e := embedgolden.RelErr(r.Embedding, g.Embeddings[i]); e > *g.Tolerance {
			t.Errorf("input %s: rel err %.3g", g.InputNames[i], e)
		}
	}
	for _, c := range []struct{ from, to, want string }{
		{`"prenorm": false`, `"prenorm": true`, "prenorm"},
		{`"qkv_proj_bias": false`, `"qkv_proj_bias": true`, "qkv_proj_bias"},
		{`"rotary_emb_fraction": 1.0`, `"rotary_emb_fraction": 0.5`, "rotary_emb_fraction"},
		{`"activation_function": "swiglu"`, `"activation_function": "gelu"`, "activation_function"},
		{`"n_head": 3`, `"n_head": 5`, "num_heads"},
	} {
		bad := nomicHF(t)
		p := filepath.Join(bad, "config.json")
		b, _ := os.ReadFile(p)
		if !strings.Contains(string(b), c.from) {
			t.Fatalf("config.json has no %s", c.from)
		}
		os.WriteFile(p, []byte(strings.Replace(string(b), c.from, c.to, 1)), 0o644)
		if _, err := embed.Open(bad, cpu.New(1)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.to, err, c.want)
		}
	}
}
