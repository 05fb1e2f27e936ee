package convert

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"wasmllm/loader"
)

// bf16Folder rewrites testdata/hf/<name> with every tensor in BF16 (round to
// nearest even), as Hugging Face checkpoints usually ship.
func bf16Folder(t *testing.T, name string) string {
	t.Helper()
	srcDir := filepath.Join(testdata, "hf", name)
	return rewriteHF(t, srcDir, nil, func(x *loader.Tensor) []*loader.Tensor {
		b, err := loader.Quantize(loader.BF16, f32(t, x))
		if err != nil {
			t.Fatal(err)
		}
		return []*loader.Tensor{{Name: x.Name, DType: loader.BF16, Shape: x.Shape, Data: b}}
	})
}

// rewriteHF writes a copy of the Hugging Face folder srcDir as one
// model.safetensors holding what each tensor maps to, with config.json
// edited by cfg when it is not nil.
func rewriteHF(t *testing.T, srcDir string, cfg func(map[string]any), mapTensor func(*loader.Tensor) []*loader.Tensor) string {
	t.Helper()
	st, err := loader.OpenSafetensors(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, n := range st.Names() {
		x, err := st.Tensor(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, y := range mapTensor(x) {
			header[y.Name] = map[string]any{"dtype": y.DType.String(), "shape": y.Shape, "data_offsets": []int{len(data), len(data) + len(y.Data)}}
			data = append(data, y.Data...)
		}
	}
	h, _ := json.Marshal(header)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	var file bytes.Buffer
	binary.Write(&file, binary.LittleEndian, uint64(len(h)))
	file.Write(h)
	file.Write(data)
	dir := filepath.Join(t.TempDir(), filepath.Base(srcDir))
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(srcDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "config.json" && cfg != nil {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			cfg(m)
			b, _ = json.Marshal(m)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	return dir
}

// TestBF16 converts a BF16 Hugging Face folder: keep widens every tensor to
// F32 without error, q8 and f16 report their error against the BF16 values,
// and all stay close to the F32 golden.
func TestBF16(t *testing.T) {
	in := bf16Folder(t, "tiny-qwen3")
	g := readGolden(t, "tiny-qwen3-f32.golden")
	for _, c := range []struct {
		quant  string
		dst    string  // layout of the matrices
		maxRel float64 // model relative rms error against the BF16 weights
		maxRow float64 // worst logits row error against the F32 golden
	}{{quantKeep, "F32", 0, 0.02}, {quantF16, "F16", 1e-6, 0.02}, {quantQ8, "q8", 1e-2, 0.15}} {
		dir, r := convertTo(t, in, c.quant)
		for _, s := range r.Tensors {
			if s.Src != "BF16" {
				t.Errorf("%s: source %s, want BF16", s.Name, s.Src)
			}
			if want := c.dst; len(s.Shape) > 1 && s.Dst != want || len(s.Shape) == 1 && s.Dst != "F32" {
				t.Errorf("-quant %s: %s written as %s", c.quant, s.Name, s.Dst)
			}
		}
		if r.Total.RelRMS > c.maxRel {
			t.Errorf("-quant %s: model relative rms %.3g > %g", c.quant, r.Total.RelRMS, c.maxRel)
		}
		w, _ := loadFolder(t, dir)
		rows, ids := runGolden(t, w, g)
		worst, agree := 0.0, 0
		for i, want := range append(append([][]float32{}, g.Logits...), g.GreedyLogits...) {
			worst = math.Max(worst, rowError(rows[i], want))
		}
		for i := range ids {
			if ids[i] == g.Greedy[i] {
				agree++
			}
		}
		t.Logf("-quant %s: model relative rms %.3g; logits vs F32 golden: worst row error %.3g, greedy agrees %d/%d", c.quant, r.Total.RelRMS, worst, agree, len(ids))
		if worst > c.maxRow {
			t.Errorf("-quant %s: worst row error %.3g > %g", c.quant, worst, c.maxRow)
		}
	}
}
