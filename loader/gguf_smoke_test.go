package loader

import "testing"

func TestReadTinyGGUFs(t *testing.T) {
	for _, f := range []string{"stories260K.gguf", "tiny-llama3-q4_0.gguf", "tiny-qwen3moe-q8_0.gguf"} {
		g, err := ReadGGUF("../testdata/models/" + f)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s v%d align %d keys %d tensors %d", f, g.Version, g.Alignment, len(g.Keys), len(g.Tensors))
		for _, k := range g.Keys {
			v := g.Meta[k]
			switch x := v.(type) {
			case []string:
				t.Logf("  %s: []string len %d", k, len(x))
			case []float32:
				t.Logf("  %s: []float32 len %d", k, len(x))
			case []int32:
				t.Logf("  %s: []int32 len %d", k, len(x))
			default:
				s := ""
				if str, ok := v.(string); ok && len(str) > 60 {
					s = str[:60]
					v = s
				}
				t.Logf("  %s: %T %v", k, v, v)
			}
		}
		for i, ti := range g.Tensors {
			if i < 16 {
				t.Logf("  %s %s %v", ti.Name, ti.DType, ti.Shape)
			}
			if _, err := g.TensorAt(i).F32(); err != nil {
				t.Error(err)
			}
		}
	}
}
