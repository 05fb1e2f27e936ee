package loader

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets for every parser. Seed corpora live in testdata/fuzz/<Name>/;
// LOADER_WRITE_SEEDS=1 go test -run TestWriteFuzzSeeds ./loader regenerates
// them from the builders in the tests and prefixes of the vendored files.

func mustFormatError(t *testing.T, err error) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error is not a *FormatError: %v", err)
	}
	if fe.Field == "" || fe.File == "" {
		t.Fatalf("FormatError without file or field: %v", err)
	}
}

func FuzzParseGGUF(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseGGUF("fuzz.gguf", data)
		if err != nil {
			mustFormatError(t, err)
			return
		}
		var tensors []*Tensor
		for i := range g.Tensors {
			tt := g.TensorAt(i)
			if err := tt.CheckSize(); err != nil {
				t.Fatalf("tensor %s: %v", tt.Name, err)
			}
			if CanDequantize(tt.DType) {
				if _, err := tt.F32(); err != nil {
					t.Fatalf("tensor %s: %v", tt.Name, err)
				}
			}
			tensors = append(tensors, tt)
		}
		// What parses must survive a write and re-parse unchanged.
		var w1, w2 bytes.Buffer
		if err := WriteGGUF(&w1, g.Version, g.MetaKVs(), tensors); err != nil {
			t.Fatalf("WriteGGUF of a parsed file: %v", err)
		}
		g2, err := ParseGGUF("rewritten.gguf", w1.Bytes())
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		tensors = tensors[:0]
		for i := range g2.Tensors {
			tensors = append(tensors, g2.TensorAt(i))
		}
		if err := WriteGGUF(&w2, g2.Version, g2.MetaKVs(), tensors); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w1.Bytes(), w2.Bytes()) {
			t.Fatal("write(parse(write(parse(x)))) differs from write(parse(x))")
		}
	})
}

func FuzzSafetensors(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		infos, _, err := parseSafetensors("fuzz.safetensors", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			mustFormatError(t, err)
			return
		}
		for _, ti := range infos {
			if ti.Offset < 0 || ti.Size < 0 || ti.Offset+ti.Size > int64(len(data)) {
				t.Fatalf("tensor %s [%d, +%d) outside %d bytes", ti.Name, ti.Offset, ti.Size, len(data))
			}
			tt := &Tensor{Name: ti.Name, DType: ti.DType, Shape: ti.Shape, Data: data[ti.Offset : ti.Offset+ti.Size]}
			if err := tt.CheckSize(); err != nil {
				t.Fatal(err)
			}
			if _, err := tt.F32(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func FuzzLlama2C(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseLlama2C("fuzz.bin", data)
		if err != nil {
			mustFormatError(t, err)
			return
		}
		for _, tt := range m.Tensors {
			if err := tt.CheckSize(); err != nil {
				t.Fatalf("tensor %s: %v", tt.Name, err)
			}
		}
	})
}

// fuzzDTypes are the types FuzzDequantize picks from.
var fuzzDTypes = []DType{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q4, Q8, Q2_K, Q3_K}

func FuzzDequantize(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		d := fuzzDTypes[int(which)%len(fuzzDTypes)]
		n := 0
		if d == Q4 || d == Q8 {
			for n+32 <= 1<<16 {
				if size, _ := d.Size(n + 32); size > len(data) {
					break
				}
				n += 32
			}
		} else {
			n = len(data) / d.BlockBytes() * d.BlockElems()
		}
		size, err := d.Size(n)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, n)
		if err := Dequantize(d, data[:size], out); err != nil {
			t.Fatal(err)
		}
		if err := Dequantize(d, data[:size], make([]float32, n+d.BlockElems())); err == nil {
			t.Fatal("Dequantize accepts too few bytes")
		}
		tt := &Tensor{Name: "x", DType: d, Shape: []int{n}, Data: data[:size]}
		switch d {
		case Q4_0, Q8_0:
			p, err := ToPlanar(tt)
			if err != nil {
				t.Fatal(err)
			}
			back, err := FromPlanar(p)
			if err != nil || !bytes.Equal(back.Data, tt.Data) {
				t.Fatalf("planar round trip: %v", err)
			}
			pf, _ := p.F32()
			for i := range out {
				if !sameFloat(pf[i], out[i]) {
					t.Fatalf("planar element %d: %v, want %v", i, pf[i], out[i])
				}
			}
			if _, err := Quantize(d, out); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// seedFile encodes values in the go test fuzz v1 corpus format.
func seedFile(values ...any) []byte {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch x := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(x)))
		case uint8:
			fmt.Fprintf(&b, "byte(%s)\n", strconv.QuoteRune(rune(x)))
		}
	}
	return []byte(b.String())
}

func prefix(t *testing.T, path string, n int) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data[:min(n, len(data))]
}

// TestWriteFuzzSeeds regenerates testdata/fuzz when LOADER_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("LOADER_WRITE_SEEDS") != "1" {
		t.Skip("set LOADER_WRITE_SEEDS=1 to regenerate the fuzz seed corpora")
	}
	seeds := map[string]map[string][]any{}
	add := func(target, name string, values ...any) {
		if seeds[target] == nil {
			seeds[target] = map[string][]any{}
		}
		seeds[target][name] = values
	}
	_, v3 := buildAllTypes(3, 64)
	_, v1 := buildAllTypes(1, 32)
	_, simple := simpleGGUF()
	add("FuzzParseGGUF", "valid-all-types-v3", v3)
	add("FuzzParseGGUF", "valid-all-types-v1", v1)
	add("FuzzParseGGUF", "valid-simple", simple)
	add("FuzzParseGGUF", "cut-all-types-v3", v3[:len(v3)/2])
	add("FuzzParseGGUF", "prefix-stories260K", prefix(t, modelsDir+"stories260K.gguf", 768))
	add("FuzzParseGGUF", "prefix-qwen3moe-q4_0", prefix(t, modelsDir+"tiny-qwen3moe-q4_0.gguf", 512))

	hdr := `{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},` +
		`"h":{"dtype":"F16","shape":[1,1],"data_offsets":[4,6]},"b":{"dtype":"BF16","shape":[],"data_offsets":[6,8]},` +
		`"c":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]}}  `
	add("FuzzSafetensors", "valid-hand-made", stFile(hdr, make([]byte, 24)))
	add("FuzzSafetensors", "valid-empty", stFile(`{}`, nil))
	add("FuzzSafetensors", "overlap", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)))
	add("FuzzSafetensors", "dtype-I64", stFile(`{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)))
	add("FuzzSafetensors", "prefix-tiny-qwen3", prefix(t, hfDir+"tiny-qwen3/model.safetensors", 1024))

	shared, _ := l2cFile(4, 2, 1, 2, 1, 3, 1)
	unshared, _ := l2cFile(4, 2, 2, 2, 1, -3, 2)
	add("FuzzLlama2C", "valid-shared", shared)
	add("FuzzLlama2C", "valid-unshared", unshared)
	add("FuzzLlama2C", "cut-unshared", unshared[:len(unshared)-6])
	add("FuzzLlama2C", "prefix-stories260K", prefix(t, modelsDir+"stories260K.bin", 28+256))
	add("FuzzLlama2C", "versioned", append([]byte("24ka"), shared[4:28]...))

	q8, _ := QuantizeQ8_0([]float32{1, -2, 3, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7})
	for i, d := range fuzzDTypes {
		blk := make([]byte, 2*max(d.BlockBytes(), 40))
		for j := range blk {
			blk[j] = byte(j * 37)
		}
		add("FuzzDequantize", "pattern-"+d.String(), uint8(i), blk)
	}
	add("FuzzDequantize", "q8_0-block", uint8(3), q8)

	for target, files := range seeds {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, values := range files {
			if err := os.WriteFile(filepath.Join(dir, name), seedFile(values...), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFuzzSeedsMeaningful: seeds named valid-* must parse, so that fuzzing
// starts from files that reach the deep checks.
func TestFuzzSeedsMeaningful(t *testing.T) {
	parse := map[string]func([]byte) error{
		"FuzzParseGGUF": func(d []byte) error { _, err := ParseGGUF("s", d); return err },
		"FuzzSafetensors": func(d []byte) error {
			_, _, err := parseSafetensors("s", bytes.NewReader(d), int64(len(d)))
			return err
		},
		"FuzzLlama2C": func(d []byte) error { _, err := ParseLlama2C("s", d); return err },
	}
	for target, p := range parse {
		entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", target))
		if err != nil || len(entries) < 3 {
			t.Fatalf("%s: %d seeds, %v", target, len(entries), err)
		}
		for _, e := range entries {
			raw, err := os.ReadFile(filepath.Join("testdata", "fuzz", target, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			body, ok := strings.CutPrefix(string(raw), "go test fuzz v1\n[]byte(")
			body, ok2 := strings.CutSuffix(strings.TrimSpace(body), ")")
			data, err := strconv.Unquote(body)
			if !ok || !ok2 || err != nil {
				t.Fatalf("%s/%s: not a single-[]byte seed", target, e.Name())
			}
			err = p([]byte(data))
			if valid := strings.HasPrefix(e.Name(), "valid"); valid != (err == nil) {
				t.Errorf("%s/%s: parse error %v", target, e.Name(), err)
			}
		}
	}
}
