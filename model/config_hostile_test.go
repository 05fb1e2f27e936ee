package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"wasmllm/internal/testkit"
	"wasmllm/loader"
)

// wantConfigField checks err is a *loader.FormatError naming file and field,
// wrapping a *ConfigError (or the source's own range error).
func wantConfigField(t *testing.T, what string, err error, file, field string) {
	t.Helper()
	var fe *loader.FormatError
	if !errors.As(err, &fe) {
		t.Errorf("%s: got %v (%T), want a *loader.FormatError", what, err, err)
		return
	}
	if fe.File != file || fe.Field != field {
		t.Errorf("%s: error names file %q field %q, want %q %q (%v)", what, fe.File, fe.Field, file, field, err)
	}
}

// TestHFConfigBounds: every hostile value of the hardening report fails
// at the config with the key of config.json that holds it.
func TestHFConfigBounds(t *testing.T) {
	base, err := os.ReadFile("../testdata/hf/tiny-llama3/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(base, &cfg); err != nil {
		t.Fatal(err)
	}
	llama3 := map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
	with := func(kv map[string]any) map[string]any {
		s := map[string]any{}
		for k, v := range llama3 {
			s[k] = v
		}
		for k, v := range kv {
			s[k] = v
		}
		return s
	}
	cases := []struct {
		key   string
		value any
		field string
	}{
		{"num_hidden_layers", int64(1) << 53, "num_hidden_layers"},
		{"num_hidden_layers", 10_000_000, "num_hidden_layers"},
		{"hidden_size", 1 << 40, "hidden_size"},
		{"vocab_size", -3, "vocab_size"},
		{"num_attention_heads", 1 << 30, "num_attention_heads"},
		{"head_dim", 7, "head_dim"},
		{"intermediate_size", 1 << 30, "intermediate_size"},
		{"rope_theta", -1.0, "rope_theta"},
		{"rope_theta", 1e300, "rope_theta"},
		{"rms_norm_eps", -1.0, "rms_norm_eps"},
		{"rms_norm_eps", 5.0, "rms_norm_eps"},
		{"max_position_embeddings", -5, "max_position_embeddings"},
		{"rope_scaling", with(map[string]any{"factor": 0.0}), "rope_scaling.factor"},
		{"rope_scaling", with(map[string]any{"low_freq_factor": 0.0}), "rope_scaling.low_freq_factor"},
		{"rope_scaling", with(map[string]any{"high_freq_factor": 1.0}), "rope_scaling.high_freq_factor"},
		{"rope_scaling", with(map[string]any{"original_max_position_embeddings": 0}), "rope_scaling.original_max_position_embeddings"},
	}
	for _, c := range cases {
		m := map[string]any{}
		for k, v := range cfg {
			m[k] = v
		}
		m[c.key] = c.value
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParseHFConfig("config.json", data)
		wantConfigField(t, c.key, err, "config.json", c.field)
	}
	if _, err := ParseHFConfig("config.json", base); err != nil {
		t.Errorf("the real config: %v", err)
	}
}

// TestGGUFConfigBounds: hostile GGUF metadata fails before any layer is
// read, fast and small, naming the metadata key.
func TestGGUFConfigBounds(t *testing.T) {
	src, err := loader.ReadGGUF("../testdata/models/tiny-llama3-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	var tensors []*loader.Tensor
	for i := range src.Tensors {
		tensors = append(tensors, src.TensorAt(i))
	}
	cases := []struct {
		key   string
		value any
	}{
		{"llama.block_count", uint32(10_000_000)},
		{"llama.block_count", uint64(1) << 53},
		{"llama.attention.layer_norm_rms_epsilon", float32(math.NaN())},
		{"llama.attention.layer_norm_rms_epsilon", float32(-1)},
		{"llama.rope.freq_base", float32(-1)},
		{"llama.rope.freq_base", float32(math.Inf(1))},
		{"llama.context_length", int32(-5)},
		{"llama.attention.head_count_kv", uint32(5)},
	}
	for _, c := range cases {
		var meta []loader.MetaKV
		for _, kv := range src.MetaKVs() {
			if kv.Key == c.key {
				kv.Value = c.value
			}
			meta = append(meta, kv)
		}
		var buf bytes.Buffer
		if err := loader.WriteGGUF(&buf, src.Version, meta, tensors); err != nil {
			t.Fatal(err)
		}
		g, err := loader.ParseGGUF("hostile.gguf", buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		work := testkit.StartWork()
		_, err = FromGGUF(g)
		runtime.ReadMemStats(&after)
		wantConfigField(t, c.key, err, "hostile.gguf", "metadata "+c.key)
		if d, a := work(), after.TotalAlloc-before.TotalAlloc; d > time.Second || a > 64<<20 {
			t.Errorf("%s: took %v and %d MB", c.key, d, a>>20)
		}
	}
}

func TestConfigParamsOverflow(t *testing.T) {
	c := Config{Arch: ArchQwen3MoE, Vocab: MaxVocab, Hidden: MaxHidden, Layers: MaxLayers, Heads: MaxHeads, KVHeads: MaxHeads,
		HeadDim: MaxHeadDim, Experts: MaxExperts, ExpertsUsed: 8, ExpertFFN: MaxFFN, RMSEps: 1e-6, RopeTheta: 1e6}
	err := c.Validate()
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "weights") {
		t.Errorf("every dimension at its bound: %v, want the weight count refused", err)
	}
	var n checked
	if n.add(n.mul(1<<40, 1<<30), 1); !n.overflow {
		t.Error("2^70 did not overflow")
	}
}
