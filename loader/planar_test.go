package loader

import (
	"bytes"
	"errors"
	"testing"
)

// TestPlanarLayoutByHand builds a 3-group Q4_0 tensor (odd group count, so
// the scale plane needs padding) and checks every byte of its Q4 repack.
func TestPlanarLayoutByHand(t *testing.T) {
	src := make([]byte, 3*18)
	for g := 0; g < 3; g++ {
		src[g*18] = byte(0x10 + g) // scale low byte
		src[g*18+1] = 0x3c
		for j := 0; j < 16; j++ {
			src[g*18+2+j] = byte(16*g + j)
		}
	}
	q40 := &Tensor{Name: "w", DType: Q4_0, Shape: []int{3, 32}, Data: src}
	p, err := ToPlanar(q40)
	if err != nil {
		t.Fatal(err)
	}
	// 48 bytes of nibbles, then 6 bytes of scales padded to 8.
	want := make([]byte, 0, 56)
	for g := 0; g < 3; g++ {
		for j := 0; j < 16; j++ {
			want = append(want, byte(16*g+j))
		}
	}
	want = append(want, 0x10, 0x3c, 0x11, 0x3c, 0x12, 0x3c, 0, 0)
	if p.DType != Q4 || !bytes.Equal(p.Data, want) {
		t.Fatalf("ToPlanar = %s % x\nwant        % x", p.DType, p.Data, want)
	}
	if n, _ := Q4.Size(96); n != 56 {
		t.Errorf("Q4.Size(96) = %d, want 56", n)
	}
	back, err := FromPlanar(p)
	if err != nil || back.DType != Q4_0 || !bytes.Equal(back.Data, src) {
		t.Fatalf("FromPlanar: %v %v", back, err)
	}
	// Q8: 32 bytes per group; 3 scales padded to 8 bytes.
	if n, _ := Q8.Size(96); n != 96+8 {
		t.Errorf("Q8.Size(96) = %d, want 104", n)
	}
}

// TestPlanarRoundTrip repacks every Q4_0 and Q8_0 tensor of the tiny models:
// the planar tensor dequantises to the same floats and FromPlanar restores
// the original bytes.
func TestPlanarRoundTrip(t *testing.T) {
	n := 0
	for _, f := range []string{"tiny-llama3-q4_0.gguf", "tiny-qwen3moe-q8_0.gguf"} {
		g, err := ReadGGUF(modelsDir + f)
		if err != nil {
			t.Fatal(err)
		}
		for i := range g.Tensors {
			orig := g.TensorAt(i)
			if orig.DType != Q4_0 && orig.DType != Q8_0 {
				if _, err := ToPlanar(orig); !errors.Is(err, ErrUnsupported) {
					t.Errorf("ToPlanar(%s %s): %v, want ErrUnsupported", orig.Name, orig.DType, err)
				}
				continue
			}
			p, err := ToPlanar(orig)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.CheckSize(); err != nil {
				t.Fatal(err)
			}
			a, _ := orig.F32()
			b, err := p.F32()
			if err != nil {
				t.Fatal(err)
			}
			checkAll(t, orig.Name, b, a)
			back, err := FromPlanar(p)
			if err != nil || !bytes.Equal(back.Data, orig.Data) || back.DType != orig.DType {
				t.Fatalf("%s: FromPlanar does not restore the bytes (%v)", orig.Name, err)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no tensors repacked")
	}
}

func TestPlanarErrors(t *testing.T) {
	if _, err := ToPlanar(&Tensor{Name: "x", DType: Q4_0, Shape: []int{32}, Data: make([]byte, 17)}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short Q4_0: %v", err)
	}
	if _, err := FromPlanar(&Tensor{Name: "x", DType: Q8_0, Shape: []int{32}, Data: make([]byte, 34)}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("FromPlanar(Q8_0): %v", err)
	}
	if _, err := FromPlanar(&Tensor{Name: "x", DType: Q8, Shape: []int{32}, Data: make([]byte, 35)}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("FromPlanar(bad size): %v", err)
	}
}
