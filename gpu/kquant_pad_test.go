package gpu

import (
	"bytes"
	"testing"

	"wasmllm/loader"
)

// TestPadKQuant checks the GPU layout of K-quant blocks: Q2_K's, Q3_K's
// and Q6_K's blocks padded with zeros to 96, 112 and 224 bytes, the other
// types as they are.
func TestPadKQuant(t *testing.T) {
	for _, c := range []struct {
		dt loader.DType
		gb int
	}{{loader.Q2_K, 96}, {loader.Q3_K, 112}, {loader.Q6_K, 224}} {
		bb := c.dt.BlockBytes()
		src := make([]byte, 3*bb)
		for i := range src {
			src[i] = byte(i*7 + 1)
		}
		got, err := PadKQuant(c.dt, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3*c.gb || KQuantBlockBytes(c.dt) != c.gb {
			t.Fatalf("%s: len %d, block %d, want %d-byte blocks", c.dt, len(got), KQuantBlockBytes(c.dt), c.gb)
		}
		for b := 0; b < 3; b++ {
			if !bytes.Equal(got[b*c.gb:b*c.gb+bb], src[b*bb:(b+1)*bb]) {
				t.Errorf("%s block %d moved its bytes", c.dt, b)
			}
			if pad := got[b*c.gb+bb : (b+1)*c.gb]; !bytes.Equal(pad, make([]byte, c.gb-bb)) {
				t.Errorf("%s block %d: padding %v, want zeros", c.dt, b, pad)
			}
		}
		if _, err := PadKQuant(c.dt, src[:bb+1]); err == nil {
			t.Errorf("%s: a partial block: no error", c.dt)
		}
	}
	for _, dt := range []loader.DType{loader.Q4_K, loader.Q5_K} {
		src := make([]byte, dt.BlockBytes())
		if got, _ := PadKQuant(dt, src); &got[0] != &src[0] || KQuantBlockBytes(dt) != dt.BlockBytes() {
			t.Errorf("%s copied; its blocks are already 16-byte aligned", dt)
		}
	}
}
