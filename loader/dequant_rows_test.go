package loader

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// dequantRows is testdata/{k,qwen2}/golden/dequant-rows.json: the raw bytes
// of a tensor's first rows and their exact dequantisation by ggml.
type dequantRows struct {
	Tensors []struct {
		Type   string      `json:"type"`
		Model  string      `json:"model"`
		Tensor string      `json:"tensor"`
		RawHex []string    `json:"raw_hex"`
		Values [][]float32 `json:"values"`
	} `json:"tensors"`
}

// TestDequantRows checks every block decoder against ggml's dequantisation
// of real rows: Q4_0 and Q8_0 (Qwen2 data), Q2_K..Q6_K and Q8_0 (K-quant
// data), bit for bit.
func TestDequantRows(t *testing.T) {
	for _, dir := range []string{"../testdata/k/golden", "../testdata/qwen2/golden"} {
		b, err := os.ReadFile(filepath.Join(dir, "dequant-rows.json"))
		if err != nil {
			t.Fatal(err)
		}
		var d dequantRows
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		for _, tn := range d.Tensors {
			dt, ok := ParseDType(tn.Type)
			if !ok {
				t.Errorf("%s: unknown type %s", dir, tn.Type)
				continue
			}
			for r, h := range tn.RawHex {
				raw, err := hex.DecodeString(h)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float32, len(tn.Values[r]))
				err = Dequantize(dt, raw, got)
				if err != nil {
					t.Errorf("%s %s row %d: %v", tn.Type, tn.Tensor, r, err)
					continue
				}
				for i, want := range tn.Values[r] {
					if math.Float32bits(got[i]) != math.Float32bits(want) {
						t.Errorf("%s %s row %d: element %d is %v, ggml says %v", tn.Type, tn.Tensor, r, i, got[i], want)
						break
					}
				}
			}
		}
	}
}
