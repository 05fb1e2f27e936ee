package synth

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// small are Qwen3.5's two shapes and Llama's at a fraction of their size.
var small = []Shape{
	{Name: "Qwen3.5-2B (small)", Arch: "qwen35", Layers: 4, Hidden: 128, Heads: 2, KVHeads: 1, HeadDim: 64, FFN: 256, Vocab: 1024,
		DType: loader.Q4_0, Context: 4096, RopeDim: 16, LinearKeyHeads: 2, LinearValueHeads: 4, LinearHeadDim: 32},
	{Name: "Qwen3.5-35B-A3B (small)", Arch: "qwen35moe", Layers: 4, Hidden: 128, Heads: 2, KVHeads: 1, HeadDim: 64, FFN: 64,
		Experts: 8, ExpertsUsed: 2, SharedFFN: 64, Vocab: 1024, Untied: true, DType: loader.Q8_0, RopeDim: 16,
		LinearKeyHeads: 2, LinearValueHeads: 4, LinearHeadDim: 32, AttnInterval: 2},
	{Name: "Llama (small)", Arch: "llama", Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 1024, DType: loader.Q4_0},
}

// TestShapeConfig writes each small shape and loads it: the loader reads
// the config Shape.Config says (so the bench's tables, computed from
// Config without a file, are the file's), the file's tensors are the
// bytes Shape.Bytes counts, and a forward on the CPU gives finite logits.
func TestShapeConfig(t *testing.T) {
	base := map[string]string{"qwen35": "../../../testdata/qwen35/models/tiny-qwen35-f32.gguf",
		"qwen35moe": "../../../testdata/qwen35/models/tiny-qwen35moe-f32.gguf", "llama": "../../../testdata/models/tiny-llama3-q4_0.gguf"}
	for _, s := range small {
		t.Run(s.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := Write(path, base[s.Arch], s); err != nil {
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
			if want := s.Config(); !reflect.DeepEqual(w.Config, want) {
				t.Errorf("loaded config\n%+v\nShape.Config\n%+v", w.Config, want)
			}
			all, perToken, err := s.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			// A decode step reads every tensor but the embedding's other
			// rows (all of them again as a tied head) and the experts not
			// routed to.
			var file, want int64
			for _, ti := range g.Tensors {
				file += ti.Size
				switch {
				case ti.Name == "token_embd.weight":
					want += ti.Size / int64(s.Vocab)
					if !s.Untied {
						want += ti.Size
					}
				case strings.HasSuffix(ti.Name, "_exps.weight"):
					want += ti.Size * int64(s.ExpertsUsed) / int64(s.Experts)
				default:
					want += ti.Size
				}
			}
			if all != file || perToken != want {
				t.Errorf("Bytes: %d in all, %d per token; the file's tensors hold %d, a step reads %d", all, perToken, file, want)
			}
			t.Logf("%d weight bytes, %d read per decode token", all, perToken)
			m, err := model.Build(cpu.New(0), w)
			if err != nil {
				t.Fatal(err)
			}
			cache, err := m.NewCache(8)
			if err != nil {
				t.Fatal(err)
			}
			logits, err := m.Forward(cache, []int32{1, 17, 42, 99}, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			row := make([]float32, s.Vocab)
			if err := m.Backend().ReadF32(logits, row); err != nil {
				t.Fatal(err)
			}
			for i, v := range row {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("logit %d is %v", i, v)
				}
			}
		})
	}
}
