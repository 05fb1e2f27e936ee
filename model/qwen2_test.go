package model_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
)

const qwen2Dir = "../testdata/qwen2"

// TestQwen2Config: the GGUF and the Hugging Face folder give the same
// Qwen2 config (q/k/v biases, NEOX RoPE at theta 1e6, no q/k norm,
// head_dim = hidden/heads, tied embeddings), and the merged bias is the q,
// k and v biases in the order of the merged weight's rows, in F32.
func TestQwen2Config(t *testing.T) {
	g, err := loader.ReadGGUF(qwen2Dir + "/models/tiny-qwen2-q8_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(qwen2Dir + "/hf/tiny-qwen2/config.json")
	if err != nil {
		t.Fatal(err)
	}
	hc, err := model.ParseHFConfig("config.json", data)
	if err != nil {
		t.Fatal(err)
	}
	c := w.Config
	want := model.Config{Arch: model.ArchQwen2, Vocab: 512, Hidden: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 256,
		QKVBias: true, RMSEps: c.RMSEps, RopeTheta: 1e6, RopeNeoX: true, MaxContext: 32768, TiedEmbeddings: true}
	if !reflect.DeepEqual(c, want) || math.Abs(c.RMSEps-1e-6) > 1e-12 {
		t.Errorf("GGUF config %+v\nwant %+v", c, want)
	}
	want.RMSEps = 1e-6
	if !reflect.DeepEqual(*hc, want) {
		t.Errorf("config.json %+v\nwant %+v", *hc, want)
	}
	for l := range c.Layers {
		b := w.Tensors[fmt.Sprintf(model.NameQKVBias, l)]
		if b == nil || b.DType != loader.F32 || !slices.Equal(b.Shape, []int{256}) {
			t.Fatalf("layer %d bias %+v", l, b)
		}
		got, err := b.F32()
		if err != nil {
			t.Fatal(err)
		}
		var parts []float32
		for _, s := range []string{"q", "k", "v"} {
			p, err := g.Tensor(fmt.Sprintf("blk.%d.attn_%s.bias", l, s))
			if err != nil {
				t.Fatal(err)
			}
			f, err := p.F32()
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, f...)
		}
		if !slices.Equal(got, parts) {
			t.Errorf("layer %d: merged bias is not q, k, v in order", l)
		}
	}
}

// TestQwen2Native checks the llama.cpp-native goldens of the quantised
// Qwen2 files loosely, as their README says: argmax agreement at 75% of
// the positions and mean |diff| within 0.1 of each row's std.
func TestQwen2Native(t *testing.T) {
	files := golden.Files(t, qwen2Dir+"/golden", "quantized-native", false, false)
	if len(files) != 2 {
		t.Fatalf("%d quantized-native goldens, want 2", len(files))
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
			logits, err := m.Forward(cache, g.Tokens, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			V := m.Config.Vocab
			all := make([]float32, len(g.Tokens)*V)
			if err := m.Backend().ReadF32(logits, all); err != nil {
				t.Fatal(err)
			}
			agree := 0
			for r, want := range g.Logits {
				same, mean, std := golden.NativeMatch(all[r*V:(r+1)*V], want)
				if same {
					agree++
				}
				if mean > 0.1*std {
					t.Errorf("row %d: mean |diff| %.3g > 0.1 x std %.3g", r, mean, std)
				}
			}
			if 4*agree < 3*len(g.Logits) {
				t.Errorf("argmax agrees at %d of %d positions", agree, len(g.Logits))
			}
			t.Logf("argmax agreement %d/%d", agree, len(g.Logits))
		})
	}
}

// TestHFConfigAttention covers the attention keys of config.json: Qwen2's
// biases are implied, its per-layer window refused; Mistral's
// sliding_window is kept unless null or as long as the context; a Llama
// or Mistral attention_bias (which biases o_proj too) is refused.
func TestHFConfigAttention(t *testing.T) {
	base := `"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":128,"vocab_size":32,"max_position_embeddings":32768`
	for _, c := range []struct {
		json        string
		window      int
		bias        bool
		errField    string // the FormatError's field, or "" for success
		errUnsuppor bool
	}{
		{`"architectures":["MistralForCausalLM"],"sliding_window":4096`, 4096, false, "", false},
		{`"architectures":["MistralForCausalLM"],"sliding_window":null`, 0, false, "", false},
		{`"architectures":["MistralForCausalLM"]`, 0, false, "", false},
		{`"architectures":["MistralForCausalLM"],"sliding_window":32768`, 0, false, "", false},
		{`"architectures":["MistralForCausalLM"],"sliding_window":-1`, 0, false, "sliding_window", false},
		{`"architectures":["MistralForCausalLM"],"attention_bias":true`, 0, false, "attention_bias", true},
		{`"architectures":["LlamaForCausalLM"],"attention_bias":true`, 0, false, "attention_bias", true},
		{`"architectures":["Qwen2ForCausalLM"],"sliding_window":4096,"use_sliding_window":false`, 0, true, "", false},
		{`"architectures":["Qwen2ForCausalLM"],"use_sliding_window":true`, 0, true, "use_sliding_window", true},
		{`"architectures":["Qwen3ForCausalLM"],"attention_bias":true`, 0, false, "attention_bias", true},
	} {
		cfg, err := model.ParseHFConfig("config.json", []byte("{"+base+","+c.json+"}"))
		if c.errField != "" {
			var fe *loader.FormatError
			if !errors.As(err, &fe) || fe.Field != c.errField || errors.Is(err, loader.ErrUnsupported) != c.errUnsuppor {
				t.Errorf("%s: got %v, want an error naming %s", c.json, err, c.errField)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.json, err)
			continue
		}
		if cfg.SlidingWindow != c.window || cfg.QKVBias != c.bias {
			t.Errorf("%s: sliding window %d bias %v, want %d %v", c.json, cfg.SlidingWindow, cfg.QKVBias, c.window, c.bias)
		}
	}
}

// TestSlidingWindow: within its window a sliding-window model is the model
// without one; past it, the last token's logits are those of the suffix
// the window lets through (L*(W-1)+1 tokens for L layers), run alone from
// position 0 (RoPE scores depend on relative positions only), and differ
// from the unwindowed model's.
func TestSlidingWindow(t *testing.T) {
	w := loadWeights(t, "../testdata/models/tiny-llama3-f32.gguf")
	plain, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	const window = 4
	w.Config.SlidingWindow = window
	sw, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	K := w.Config.Layers*(window-1) + 1
	ids := make([]int32, K+9)
	for i := range ids {
		ids[i] = int32((i*37 + 11) % 256)
	}
	run := func(m *model.Model, ids []int32) []float32 {
		t.Helper()
		cache, err := m.NewCache(len(ids))
		if err != nil {
			t.Fatal(err)
		}
		logits, err := m.Forward(cache, ids, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, len(ids)*m.Config.Vocab)
		if err := m.Backend().ReadF32(logits, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	V := w.Config.Vocab
	full, windowed := run(plain, ids), run(sw, ids)
	if !slices.Equal(full[:window*V], windowed[:window*V]) {
		t.Error("within the window the logits differ from the model without one")
	}
	last := windowed[len(windowed)-V:]
	if e, _ := golden.RowError(last, full[len(full)-V:]); e < 1e-3 {
		t.Errorf("past the window the logits are those of the model without one (error %.3g)", e)
	}
	suffix := run(sw, ids[len(ids)-K:])
	if e, i := golden.RowError(last, suffix[len(suffix)-V:]); e > 1e-4 {
		t.Errorf("last token vs its %d-token suffix alone: error %.3g at %d", K, e, i)
	} else {
		t.Logf("last token vs its %d-token suffix alone: error %.3g", K, e)
	}
}

// TestGGUFLlamaBiases: a llama GGUF with q/k/v biases (the tiny Qwen2 file
// relabelled) loads them, as llama.cpp does; one with an attention output
// bias is refused naming that tensor.
func TestGGUFLlamaBiases(t *testing.T) {
	src, err := loader.ReadGGUF(qwen2Dir + "/models/tiny-qwen2-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	var meta []loader.MetaKV
	for _, kv := range src.MetaKVs() {
		if kv.Key == "general.architecture" {
			kv.Value = "llama"
		} else if rest, ok := strings.CutPrefix(kv.Key, "qwen2."); ok {
			kv.Key = "llama." + rest
		}
		meta = append(meta, kv)
	}
	var tensors []*loader.Tensor
	for i := range src.Tensors {
		tensors = append(tensors, src.TensorAt(i))
	}
	read := func(tensors []*loader.Tensor) (*model.Weights, error) {
		var buf bytes.Buffer
		if err := loader.WriteGGUF(&buf, src.Version, meta, tensors); err != nil {
			t.Fatal(err)
		}
		g, err := loader.ParseGGUF("llama-bias.gguf", buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return model.FromGGUF(g)
	}
	w, err := read(tensors)
	if err != nil {
		t.Fatal(err)
	}
	if c := w.Config; c.Arch != model.ArchLlama || !c.QKVBias || c.RopeNeoX || w.Tensors[fmt.Sprintf(model.NameQKVBias, 1)] == nil {
		t.Errorf("config %+v", c)
	}
	if _, err := model.Build(cpu.New(1), w); err != nil {
		t.Fatal(err)
	}
	bo := *src.TensorAt(0)
	bo.Name, bo.DType, bo.Shape, bo.Data = "blk.0.attn_output.bias", loader.F32, []int{128}, make([]byte, 4*128)
	_, err = read(append(tensors, &bo))
	var fe *loader.FormatError
	if !errors.As(err, &fe) || fe.Field != "tensor blk.0.attn_output.bias" || !errors.Is(err, loader.ErrUnsupported) {
		t.Errorf("attention output bias: got %v, want it refused", err)
	}
}
