package gpu

import (
	"bytes"
	"testing"

	"wasmllm/loader"
)

// TestPadKQuant checks the GPU layout of K-quant blocks: Q6_K's blocks
// padded with zeros to 224 bytes, the other types as they are.
func TestPadKQuant(t *testing.T) {
	src := make([]byte, 3*210)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	got, err := PadKQuant(loader.Q6_K, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3*224 {
		t.Fatalf("len %d, want %d", len(got), 3*224)
	}
	for b := 0; b < 3; b++ {
		if !bytes.Equal(got[b*224:b*224+210], src[b*210:(b+1)*210]) {
			t.Errorf("block %d moved its bytes", b)
		}
		if !bytes.Equal(got[b*224+210:(b+1)*224], make([]byte, 14)) {
			t.Errorf("block %d: padding %v, want zeros", b, got[b*224+210:(b+1)*224])
		}
	}
	if _, err := PadKQuant(loader.Q6_K, src[:211]); err == nil {
		t.Error("a partial block: no error")
	}
	q4k := make([]byte, 144)
	if got, _ := PadKQuant(loader.Q4_K, q4k); &got[0] != &q4k[0] {
		t.Error("Q4_K copied; its blocks are already 16-byte aligned")
	}
	if KQuantBlockBytes(loader.Q6_K)%16 != 0 || KQuantBlockBytes(loader.Q4_K) != 144 {
		t.Error("block sizes")
	}
}
