package model

import (
	"errors"
	"math"
	"strings"
	"testing"

	"wasmllm/loader"
)

// names is a tensorSource that has the named tensors (and reads none).
type names map[string]bool

func (n names) Has(name string) bool { return n[name] }
func (n names) Tensor(name string) (*loader.Tensor, error) {
	return nil, &loader.FormatError{File: "x.gguf", Field: "tensor " + name, Offset: -1, Err: loader.ErrNotFound}
}

var phi3Factors = names{"rope_factors_short.weight": true, "rope_factors_long.weight": true}

func phi3Meta() map[string]any {
	return map[string]any{
		"phi3.rope.dimension_count":                 uint32(24),
		"phi3.rope.scaling.original_context_length": uint32(256),
		"phi3.rope.scaling.attn_factor":             float32(1.25),
	}
}

func phi3(meta map[string]any, src tensorSource) (*Config, error) {
	c := &Config{Arch: ArchPhi3, HeadDim: 32, MaxContext: 8192}
	return c, ggufPhi3(&loader.GGUF{File: "x.gguf", Meta: meta}, src, c)
}

// TestGGUFPhi3Rope: partial rotary from rope.dimension_count (none when it
// is the head dim), LongRoPE only with the factor tensors, and Hugging
// Face's attention factor when the file has none.
func TestGGUFPhi3Rope(t *testing.T) {
	c, err := phi3(phi3Meta(), phi3Factors)
	if err != nil {
		t.Fatal(err)
	}
	want := RopeScaling{Type: RopeLongRoPE, Factor: 32, OriginalMaxPositionEmbeddings: 256, AttentionFactor: 1.25}
	if !c.RopeNeoX || c.RopeDim != 24 || c.RopeScaling == nil || *c.RopeScaling != want {
		t.Errorf("got rope dim %d neox %v scaling %+v, want 24 true %+v", c.RopeDim, c.RopeNeoX, c.RopeScaling, want)
	}
	meta := phi3Meta()
	meta["phi3.rope.dimension_count"] = uint32(32)
	delete(meta, "phi3.rope.scaling.attn_factor")
	if c, err = phi3(meta, phi3Factors); err != nil {
		t.Fatal(err)
	}
	// Phi-4-mini's: 131072 from 4096 gives about 1.19024.
	if c.RopeDim != 0 || math.Abs(c.RopeScaling.AttentionFactor-math.Sqrt(1+math.Log(32)/math.Log(256))) > 1e-15 ||
		math.Abs(LongRoPEAttentionFactor(131072, 4096)-1.19024) > 1e-5 || LongRoPEAttentionFactor(4096, 4096) != 1 {
		t.Errorf("rope dim %d, attention factor %v", c.RopeDim, c.RopeScaling.AttentionFactor)
	}
	if c, err = phi3(phi3Meta(), names{}); err != nil || c.RopeScaling != nil {
		t.Errorf("no factor tensors (Phi-4): scaling %+v, err %v", c.RopeScaling, err)
	}
}

// TestGGUFPhi3Errors: each inconsistent value is a *loader.FormatError
// naming its key or tensor.
func TestGGUFPhi3Errors(t *testing.T) {
	cases := []struct {
		key   string
		val   any // nil: delete it
		src   tensorSource
		field string
	}{
		{"phi3.rope.dimension_count", uint32(33), phi3Factors, "rope.dimension_count"},
		{"phi3.rope.dimension_count", uint32(64), phi3Factors, "rope.dimension_count"},
		{"phi3.rope.scaling.original_context_length", nil, phi3Factors, "rope.scaling.original_context_length"},
		{"phi3.rope.scaling.original_context_length", uint32(0), phi3Factors, "rope.scaling.original_context_length"},
		{"", nil, names{"rope_factors_short.weight": true}, "tensor rope_factors_long.weight"},
	}
	for _, tc := range cases {
		meta := phi3Meta()
		if tc.val == nil {
			delete(meta, tc.key)
		} else {
			meta[tc.key] = tc.val
		}
		_, err := phi3(meta, tc.src)
		var fe *loader.FormatError
		if !errors.As(err, &fe) || !strings.HasSuffix(fe.Field, tc.field) {
			t.Errorf("%s = %v: got %v, want a FormatError naming %s", tc.key, tc.val, err, tc.field)
		}
	}
}

// TestValidateLongRoPE: Validate refuses LongRoPE outside its families and
// out-of-range values.
func TestValidateLongRoPE(t *testing.T) {
	base := func() Config {
		return Config{Arch: ArchPhi3, Vocab: 512, Hidden: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 256,
			RMSEps: 1e-5, RopeTheta: 1e4, RopeNeoX: true, RopeDim: 24, MaxContext: 8192,
			RopeScaling: &RopeScaling{Type: RopeLongRoPE, Factor: 32, OriginalMaxPositionEmbeddings: 256, AttentionFactor: 1.27}}
	}
	c := base()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(c *Config){
		"rope_scaling.rope_type":                        func(c *Config) { c.Arch = ArchLlama; c.RopeDim = 0 },
		"rope_scaling.original_max_position_embeddings": func(c *Config) { c.RopeScaling.OriginalMaxPositionEmbeddings = 0 },
		"rope_scaling.attention_factor":                 func(c *Config) { c.RopeScaling.AttentionFactor = math.NaN() },
		"rope_scaling.factor":                           func(c *Config) { c.RopeScaling.Factor = math.Inf(1) },
		"rope_dim":                                      func(c *Config) { c.RopeDim = 31 },
	}
	for field, f := range bad {
		c := base()
		f(&c)
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("%s: got %v", field, err)
		}
	}
}

// TestLongRoPEFactorsChecked: Build refuses a factor that is not finite
// and positive (a frequency is divided by it), naming the tensor.
func TestLongRoPEFactorsChecked(t *testing.T) {
	for _, v := range []float32{0, -1, float32(math.NaN()), float32(math.Inf(1))} {
		w := &Weights{Tensors: map[string]*loader.Tensor{}}
		for _, name := range []string{NameRopeFactorsShort, NameRopeFactorsLong} {
			data := make([]byte, 4*12)
			for i := range 12 {
				putF32(data[4*i:], 1)
			}
			w.Tensors[name] = &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{12}, Data: data}
		}
		putF32(w.Tensors[NameRopeFactorsLong].Data[4*5:], v)
		_, _, err := longRoPEFactors(w)
		var ce *ConfigError
		var fe *loader.FormatError
		if !errors.As(err, &ce) || ce.Field != NameRopeFactorsLong || !errors.As(err, &fe) || fe.Field != "tensor "+NameRopeFactorsLong {
			t.Errorf("factor %v: got %v", v, err)
		}
	}
}

func putF32(b []byte, v float32) {
	u := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

// capacityOnly is a KVCache of a capacity, for useLongRoPE.
type capacityOnly int

func (c capacityOnly) Capacity() int { return int(c) }
func (capacityOnly) KVHeads() int    { return 1 }
func (capacityOnly) HeadDim() int    { return 2 }

// TestUseLongRoPE: which factor set each mode picks. Per context, the
// capacity is rounded up to a multiple of 256 first, as llama.cpp rounds
// its context; per pass, the pass's end (or SetPassEnd's) is compared.
func TestUseLongRoPE(t *testing.T) {
	m := &Model{Config: Config{RopeScaling: &RopeScaling{Type: RopeLongRoPE}}}
	for _, c := range []struct {
		mode           LongRoPEMode
		orig, capacity int
		pos, T, end    int
		want           bool
	}{
		{LongRoPEPerContext, 256, 256, 0, 1, 0, false},
		{LongRoPEPerContext, 256, 257, 0, 1, 0, true},
		{LongRoPEPerContext, 300, 290, 0, 1, 0, true}, // 290 -> 512
		{LongRoPEPerContext, 4096, 4000, 0, 1, 0, false},
		{LongRoPEPerPass, 256, 1000, 0, 256, 0, false},
		{LongRoPEPerPass, 256, 1000, 0, 257, 0, true},
		{LongRoPEPerPass, 256, 1000, 256, 1, 0, true},
		{LongRoPEPerPass, 256, 1000, 0, 128, 300, true}, // a chunk of a longer pass
		{LongRoPEShort, 256, 1000, 900, 1, 0, false},
		{LongRoPELong, 256, 16, 0, 1, 0, true},
	} {
		m.LongRoPE, m.Config.RopeScaling.OriginalMaxPositionEmbeddings = c.mode, c.orig
		m.SetPassEnd(c.end)
		if got := m.useLongRoPE(capacityOnly(c.capacity), c.pos, c.T); got != c.want {
			t.Errorf("%+v: long %v", c, got)
		}
	}
	m.SetPassEnd(0)
	m.Config.RopeScaling = nil
	if m.useLongRoPE(capacityOnly(1<<20), 1<<19, 1) {
		t.Error("a model without LongRoPE uses long factors")
	}
}
