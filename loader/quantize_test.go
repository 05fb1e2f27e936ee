package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

const modelsDir = "../testdata/models/"

func TestQuantizeQ8_0ByHand(t *testing.T) {
	x := make([]float32, 32)
	copy(x, []float32{127, -63.5, 0.5, -0.5, 2.5, 1.49, -127, 0})
	got, err := QuantizeQ8_0(x)
	if err != nil {
		t.Fatal(err)
	}
	// amax 127 -> d = 1 (f16 0x3c00); ties round away from zero.
	want := make([]byte, 34)
	binary.LittleEndian.PutUint16(want, 0x3c00)
	for j, q := range []int8{127, -64, 1, -1, 3, 1, -127, 0} {
		want[2+j] = byte(q)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("QuantizeQ8_0 = % x\nwant           % x", got, want)
	}
	zero, _ := QuantizeQ8_0(make([]float32, 32))
	if !bytes.Equal(zero, make([]byte, 34)) {
		t.Errorf("QuantizeQ8_0(zeros) = % x", zero)
	}
	if _, err := QuantizeQ8_0(make([]float32, 31)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("31 values: %v", err)
	}
}

func TestQuantizeQ4_0ByHand(t *testing.T) {
	// The value of largest magnitude is -8, so d = -8/-8 = 1 and x/d + 8.5
	// truncates: -8 -> 0, 7 -> 15, 7.6 -> min(15, 16) = 15, -0.5 -> 8,
	// -0.6 -> 7, 0.49 -> 8.
	x := make([]float32, 32)
	copy(x, []float32{-8, 7, 7.6, -0.5, -0.6, 0.49})
	x[16], x[17] = 8, -3 // |8| ties with |-8|: the first one stays the max
	got, err := QuantizeQ4_0(x)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 18)
	binary.LittleEndian.PutUint16(want, 0x3c00)
	lo := []byte{0, 15, 15, 8, 7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8}
	hi := []byte{15, 5, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8} // 8 -> 16.5 -> 15; -3 -> 5
	for j := range lo {
		want[2+j] = lo[j] | hi[j]<<4
	}
	if !bytes.Equal(got, want) {
		t.Errorf("QuantizeQ4_0 = % x\nwant           % x", got, want)
	}
	// A positive maximum gives a negative scale: 8 -> d = -1, x = 8 -> 0.
	x[0], x[16] = 1, 0
	x[5] = 8
	got, _ = QuantizeQ4_0(x)
	if d := binary.LittleEndian.Uint16(got); d != 0xbc00 {
		t.Errorf("d = %#04x, want 0xbc00 (-1)", d)
	}
	if q := got[2+5] & 0xf; q != 0 {
		t.Errorf("q(8) = %d, want 0", q)
	}
	// All zeros: max stays +0 and d = +0/-8 = -0 (f16 0x8000); every q is 8.
	zero, _ := QuantizeQ4_0(make([]float32, 32))
	want = bytes.Repeat([]byte{0x88}, 18)
	want[0], want[1] = 0x00, 0x80
	if !bytes.Equal(zero, want) {
		t.Errorf("QuantizeQ4_0(zeros) = % x", zero)
	}
}

// TestQuantizeMatchesLlamaQuantize re-quantises the F32 tiny models and
// compares every Q8_0 and Q4_0 tensor byte for byte with llama-quantize's
// output in the vendored -q8_0 and -q4_0 files. tiny-qwen3moe's F32 GGUF
// here is its q8_0 file dequantised, so only Q8_0 applies: quantising it
// again must give the same blocks (the Q4_0 experts are checked by the
// fixture build of tiny-qwen35moe-q4_0.gguf against llama-quantize's
// sha256).
func TestQuantizeMatchesLlamaQuantize(t *testing.T) {
	for _, model := range []string{"tiny-llama3", "tiny-qwen3", "tiny-qwen3moe"} {
		f32, err := ReadGGUF(modelsDir + f32GGUF(model))
		if err != nil {
			t.Fatal(err)
		}
		types := []string{"q8_0", "q4_0"}
		if model == "tiny-qwen3moe" {
			types = types[:1]
		}
		for _, qt := range types {
			qg, err := ReadGGUF(modelsDir + model + "-" + qt + ".gguf")
			if err != nil {
				t.Fatal(err)
			}
			counts := map[DType]int{}
			for i := range qg.Tensors {
				want := qg.TensorAt(i)
				if want.DType != Q8_0 && want.DType != Q4_0 {
					continue
				}
				src, err := f32.Tensor(want.Name)
				if err != nil {
					t.Fatal(err)
				}
				x, err := src.F32()
				if err != nil {
					t.Fatal(err)
				}
				got, err := Quantize(want.DType, x)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want.Data) {
					n := 0
					for n < len(got) && got[n] == want.Data[n] {
						n++
					}
					t.Errorf("%s-%s %s (%s): first difference at byte %d of %d", model, qt, want.Name, want.DType, n, len(got))
				}
				counts[want.DType]++
			}
			if counts[Q8_0]+counts[Q4_0] == 0 || (qt == "q4_0" && counts[Q4_0] == 0) {
				t.Errorf("%s-%s: no quantised tensors compared", model, qt)
			}
			t.Logf("%s-%s: %d Q8_0 and %d Q4_0 tensors identical", model, qt, counts[Q8_0], counts[Q4_0])
		}
	}
}

func TestQuantizeFloatTypes(t *testing.T) {
	x := []float32{1, -2, 0.333333343, 65520, float32(math.Inf(-1))}
	for _, c := range []struct {
		d    DType
		want []byte
	}{
		{F16, []byte{0x00, 0x3c, 0x00, 0xc0, 0x55, 0x35, 0x00, 0x7c, 0x00, 0xfc}},
		{BF16, []byte{0x80, 0x3f, 0x00, 0xc0, 0xab, 0x3e, 0x80, 0x47, 0x80, 0xff}},
	} {
		got, err := Quantize(c.d, x)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("Quantize(%s) = % x, %v; want % x", c.d, got, err, c.want)
		}
	}
	got, _ := Quantize(F32, x[:2])
	if !bytes.Equal(got, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}) {
		t.Errorf("Quantize(F32) = % x", got)
	}
	if _, err := Quantize(Q4_K, make([]float32, 256)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Quantize(Q4_K): %v", err)
	}
}
