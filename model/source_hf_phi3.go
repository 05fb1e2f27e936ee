package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"

	"wasmllm/loader"
)

// hfPhi3Config is what a Phi3ForCausalLM config.json adds: partial rotary
// and LongRoPE's factor lists (rope_scaling {"type": "longrope",
// "short_factor", "long_factor"}, original_max_position_embeddings at the
// top level as Phi-3.5-mini and Phi-4-mini write it, or in rope_scaling).
// (partial_rotary_factor is read with hfHybridConfig's keys.)
type hfPhi3Config struct {
	OriginalMaxPositionEmbeddings int `json:"original_max_position_embeddings"`
}

// phi3 finishes a Phi3ForCausalLM config after the common keys:
// rotary dims head_dim·partial_rotary_factor (NEOX, as every Hugging Face
// checkpoint), and LongRoPE from rope_scaling, its factor lists kept for
// the tensors NameRopeFactorsShort and NameRopeFactorsLong (hfPhi3Source)
// and its attention factor Hugging Face's default unless rope_scaling
// gives one. The sliding window is not used, as in the GGUF path
// (llama.cpp's phi3).
func (h *hfConfig) phi3(c *Config, ferr func(string, error) error) error {
	c.SlidingWindow = 0
	if p := h.PartialRotaryFactor; p != nil {
		if !finite(*p) || *p <= 0 || *p > 1 {
			return ferr("partial_rotary_factor", fmt.Errorf("%w: %v, want (0, 1]", loader.ErrCorrupt, *p))
		}
		if d := int(float64(c.HeadDim) * *p); d != c.HeadDim {
			c.RopeDim = d
		}
	}
	s := c.RopeScaling
	if s == nil {
		return nil
	}
	if s.Type != RopeLongRoPE {
		return ferr("rope_scaling.type", fmt.Errorf("%w: %q for phi3", loader.ErrUnsupported, s.Type))
	}
	var lists struct {
		Short []float64 `json:"short_factor"`
		Long  []float64 `json:"long_factor"`
	}
	if err := json.Unmarshal(h.RopeScaling, &lists); err != nil {
		return ferr("rope_scaling", fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
	}
	if h.OriginalMaxPositionEmbeddings > 0 {
		s.OriginalMaxPositionEmbeddings = h.OriginalMaxPositionEmbeddings
	}
	if s.OriginalMaxPositionEmbeddings <= 0 || s.OriginalMaxPositionEmbeddings > MaxContext {
		return ferr("original_max_position_embeddings", fmt.Errorf("%w: %d", loader.ErrCorrupt, s.OriginalMaxPositionEmbeddings))
	}
	s.Factor = float64(c.MaxContext) / float64(s.OriginalMaxPositionEmbeddings)
	if s.AttentionFactor == 0 {
		s.AttentionFactor = LongRoPEAttentionFactor(c.MaxContext, s.OriginalMaxPositionEmbeddings)
	}
	half := c.HeadDim / 2
	if c.RopeDim > 0 {
		half = c.RopeDim / 2
	}
	for name, l := range map[string][]float64{"rope_scaling.short_factor": lists.Short, "rope_scaling.long_factor": lists.Long} {
		if len(l) != half {
			return ferr(name, fmt.Errorf("%w: %d factors, want %d (rotary dims / 2)", loader.ErrCorrupt, len(l), half))
		}
	}
	c.longRoPEFactors = [2][]float64{lists.Short, lists.Long}
	return nil
}

// hfPhi3Tensors are a Phi3ForCausalLM checkpoint's names: qkv_proj and
// gate_up_proj are stored fused (q, k, v rows; the gate's rows first), as
// the canonical tensors; the factor tensors come from config.json.
var hfPhi3Tensors = func() tensorTable {
	t := maps.Clone(hfTensors)
	t[NameQKV] = either(one("model.layers.%d.self_attn.qkv_proj.weight"), hfTensors[NameQKV])
	t[NameGateUp] = either(one("model.layers.%d.mlp.gate_up_proj.weight"), hfTensors[NameGateUp])
	t[NameRopeFactorsShort] = one(NameRopeFactorsShort)
	t[NameRopeFactorsLong] = one(NameRopeFactorsLong)
	delete(t, NameQKVBias)
	return t
}()

// hfPhi3Source is a checkpoint's tensors with LongRoPE's factor lists of
// config.json as F32 tensors under their canonical names.
type hfPhi3Source struct {
	tensorSource
	factors map[string]*loader.Tensor
}

func newHFPhi3Source(c *Config, st tensorSource) hfPhi3Source {
	src := hfPhi3Source{st, map[string]*loader.Tensor{}}
	for i, name := range []string{NameRopeFactorsShort, NameRopeFactorsLong} {
		l := c.longRoPEFactors[i]
		if l == nil {
			continue
		}
		data := make([]byte, 4*len(l))
		for j, v := range l {
			binary.LittleEndian.PutUint32(data[4*j:], math.Float32bits(float32(v)))
		}
		src.factors[name] = &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{len(l)}, Data: data}
	}
	return src
}

func (s hfPhi3Source) Has(name string) bool {
	if _, ok := s.factors[name]; ok {
		return true
	}
	return s.tensorSource.Has(name)
}

func (s hfPhi3Source) Tensor(name string) (*loader.Tensor, error) {
	if t, ok := s.factors[name]; ok {
		return t, nil
	}
	return s.tensorSource.Tensor(name)
}
