package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ggufBuilder writes GGUF files for tests, independently of WriteGGUF, and
// records each field's byte span under the name ParseGGUF gives it, so that
// tests can say exactly which error a corrupt or truncated file must give.
type ggufBuilder struct {
	buf     []byte
	v2      bool
	align   int
	spans   []span
	tensors []builtTensor
}

type span struct {
	start, end int
	field      string
	checks     []countCheck // checked once the span has been read
}

// countCheck: the parser rejects a count with ErrTooLarge, naming field at
// offset at, when fewer than need bytes follow the span.
type countCheck struct {
	field string
	at    int
	need  uint64
}

type builtTensor struct {
	name              string
	offsetAt, dataEnd int
	dtype             DType
	shape             []int // row-major
	data              []byte
	dataStart         int
	relOffsetOverride *uint64
}

func newBuilder(version uint32) *ggufBuilder {
	b := &ggufBuilder{v2: version >= 2, align: 32}
	b.add("magic", []byte("GGUF"))
	b.u32("version", version)
	return b
}

func (b *ggufBuilder) add(field string, p []byte) *span {
	start := len(b.buf)
	b.buf = append(b.buf, p...)
	b.spans = append(b.spans, span{start: start, end: len(b.buf), field: field})
	return &b.spans[len(b.spans)-1]
}

func (b *ggufBuilder) u32(field string, v uint32) *span {
	return b.add(field, binary.LittleEndian.AppendUint32(nil, v))
}

func (b *ggufBuilder) u64(field string, v uint64) *span {
	return b.add(field, binary.LittleEndian.AppendUint64(nil, v))
}

func (b *ggufBuilder) count(field string, v uint64) *span {
	if b.v2 {
		return b.u64(field, v)
	}
	return b.u32(field, uint32(v))
}

func (b *ggufBuilder) cs() uint64 {
	if b.v2 {
		return 8
	}
	return 4
}

// str writes a string; a cut anywhere in it is reported at its length.
func (b *ggufBuilder) str(field, s string) {
	var p []byte
	if b.v2 {
		p = binary.LittleEndian.AppendUint64(nil, uint64(len(s)))
	} else {
		p = binary.LittleEndian.AppendUint32(nil, uint32(len(s)))
	}
	b.add(field+" length", append(p, s...))
}

func (b *ggufBuilder) header(nTensors, nKV uint64) {
	b.count("tensor count", nTensors)
	s := b.count("metadata count", nKV)
	s.checks = []countCheck{
		{"tensor count", 8, nTensors * (b.cs() + 16)},
		{"metadata count", s.start, nKV * (b.cs() + 5)},
	}
}

// Metadata type ids, spelled out here rather than taken from the parser.
var metaType = map[string]uint32{
	"uint8": 0, "int8": 1, "uint16": 2, "int16": 3, "uint32": 4, "int32": 5, "float32": 6,
	"bool": 7, "string": 8, "array": 9, "uint64": 10, "int64": 11, "float64": 12,
}

func goType(v any) (string, int) {
	switch v.(type) {
	case uint8, []uint8:
		return "uint8", 1
	case int8, []int8:
		return "int8", 1
	case uint16, []uint16:
		return "uint16", 2
	case int16, []int16:
		return "int16", 2
	case uint32, []uint32:
		return "uint32", 4
	case int32, []int32:
		return "int32", 4
	case float32, []float32:
		return "float32", 4
	case bool, []bool:
		return "bool", 1
	case string, []string:
		return "string", 0
	case uint64, []uint64:
		return "uint64", 8
	case int64, []int64:
		return "int64", 8
	case float64, []float64:
		return "float64", 8
	case []any:
		return "array", 0
	}
	panic(fmt.Sprintf("goType %T", v))
}

func le(v any) []byte {
	var w bytes.Buffer
	if err := binary.Write(&w, binary.LittleEndian, v); err != nil {
		panic(err)
	}
	return w.Bytes()
}

func isSlice(v any) bool {
	switch v.(type) {
	case string, uint8, int8, uint16, int16, uint32, int32, float32, bool, uint64, int64, float64:
		return false
	}
	return true
}

func (b *ggufBuilder) kv(i int, key string, v any) {
	b.str(fmt.Sprintf("metadata key %d", i), key)
	field := "metadata " + key
	if !isSlice(v) {
		name, _ := goType(v)
		b.u32(field+" type", metaType[name])
		if s, ok := v.(string); ok {
			b.str(field, s)
		} else {
			b.add(field, le(v))
		}
		return
	}
	b.u32(field+" type", metaType["array"])
	b.array(field, v)
}

func (b *ggufBuilder) array(field string, v any) {
	name, size := goType(v)
	b.u32(field+" element type", metaType[name])
	switch x := v.(type) {
	case []string:
		s := b.count(field+" count", uint64(len(x)))
		s.checks = []countCheck{{field + " count", s.start, uint64(len(x)) * b.cs()}}
		for i, e := range x {
			b.str(fmt.Sprintf("%s[%d]", field, i), e)
		}
	case []any:
		s := b.count(field+" count", uint64(len(x)))
		s.checks = []countCheck{{field + " count", s.start, uint64(len(x)) * (4 + b.cs())}}
		for i, e := range x {
			b.array(fmt.Sprintf("%s[%d]", field, i), e)
		}
	default:
		data := le(v)
		s := b.count(field+" count", uint64(len(data)/size))
		s.checks = []countCheck{{field + " count", s.start, uint64(len(data))}}
		if len(data) > 0 {
			b.add(field, data)
		}
	}
}

// tensorInfo writes a tensor table entry; data goes out in finish.
func (b *ggufBuilder) tensorInfo(i int, name string, dt DType, shape []int, data []byte) {
	b.str(fmt.Sprintf("tensor %d name", i), name)
	b.u32("tensor "+name+" dimension count", uint32(len(shape)))
	for d := 0; d < len(shape); d++ {
		b.count(fmt.Sprintf("tensor %s dimension %d", name, d), uint64(shape[len(shape)-1-d]))
	}
	b.u32("tensor "+name+" type", uint32(dt))
	var rel uint64
	for _, t := range b.tensors {
		rel += uint64((len(t.data) + b.align - 1) / b.align * b.align)
	}
	s := b.u64("tensor "+name+" offset", rel)
	b.tensors = append(b.tensors, builtTensor{name: name, offsetAt: s.start, dtype: dt, shape: shape, data: data})
}

func (b *ggufBuilder) pad() {
	for len(b.buf)%b.align != 0 {
		b.buf = append(b.buf, 0)
	}
}

func (b *ggufBuilder) finish() []byte {
	b.pad()
	for i := range b.tensors {
		t := &b.tensors[i]
		t.dataStart = len(b.buf)
		b.buf = append(b.buf, t.data...)
		t.dataEnd = len(b.buf)
		b.pad()
	}
	return b.buf
}

// expectCut returns the error ParseGGUF must give for the first n bytes.
func (b *ggufBuilder) expectCut(n int) (field string, at int, cause error) {
	for _, s := range b.spans {
		if n < s.end {
			return s.field, s.start, ErrTruncated
		}
		for _, c := range s.checks {
			if c.need > uint64(n-s.end) {
				return c.field, c.at, ErrTooLarge
			}
		}
	}
	for _, t := range b.tensors {
		if t.dataEnd > n {
			return "tensor " + t.name + " offset", t.offsetAt, ErrTruncated
		}
	}
	return "", 0, nil
}

func (b *ggufBuilder) spanOf(field string) span {
	for _, s := range b.spans {
		if s.field == field {
			return s
		}
	}
	panic("no field " + field)
}

// wantFormatError checks that err is a *FormatError for file with the
// given field, offset and cause.
func wantFormatError(t *testing.T, err error, file, field string, off int64, cause error) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want a *FormatError (%s at %d: %v)", err, field, off, cause)
	}
	if fe.File != file || fe.Field != field || fe.Offset != off || !errors.Is(err, cause) {
		t.Fatalf("got %q, want file %q field %q offset %d cause %v", err, file, field, off, cause)
	}
}

// allTypesMeta has a value of every metadata type, arrays of every type
// (empty ones included) and arrays of arrays.
func allTypesMeta() []MetaKV {
	return []MetaKV{
		{"general.architecture", "llama"},
		{"t.u8", uint8(200)},
		{"t.i8", int8(-100)},
		{"t.u16", uint16(65000)},
		{"t.i16", int16(-32000)},
		{"t.u32", uint32(4000000000)},
		{"t.i32", int32(-2000000000)},
		{"t.f32", float32(-1.5e-3)},
		{"t.bool", true},
		{"t.false", false},
		{"t.str", "héllo\x00world"},
		{"t.empty", ""},
		{"t.u64", uint64(1) << 63},
		{"t.i64", int64(-1) << 62},
		{"t.f64", math.Pi},
		{"a.u8", []uint8{0, 1, 255}},
		{"a.i8", []int8{-128, 0, 127}},
		{"a.u16", []uint16{1, 65535}},
		{"a.i16", []int16{-32768, 32767}},
		{"a.u32", []uint32{7}},
		{"a.i32", []int32{-1, 2, -3}},
		{"a.f32", []float32{0.5, float32(math.Inf(-1))}},
		{"a.bool", []bool{true, false, true}},
		{"a.str", []string{"a", "", "ccc"}},
		{"a.u64", []uint64{math.MaxUint64}},
		{"a.i64", []int64{math.MinInt64}},
		{"a.f64", []float64{1e300, -0.25}},
		{"a.empty.u32", []uint32{}},
		{"a.empty.str", []string{}},
		{"a.nested", []any{[]int32{1, 2}, []string{"x"}, []any{[]uint8{9}}, []float64{}}},
		{"a.empty.nested", []any{}},
	}
}

func buildAllTypes(version uint32, align int) (*ggufBuilder, []byte) {
	b := newBuilder(version)
	meta := allTypesMeta()
	if align != 32 {
		b.align = align
		meta = append(meta, MetaKV{"general.alignment", uint32(align)})
	}
	b.header(3, uint64(len(meta)))
	for i, kv := range meta {
		b.kv(i, kv.Key, kv.Value)
	}
	f32 := le([]float32{1, 2, 3, 4, 5, 6})
	q8 := make([]byte, 2*34)
	q8[0], q8[1], q8[2] = 0x00, 0x3c, 5 // d = 1, first q = 5
	f16 := le([]uint16{0x3c00, 0xc000, 0x3800})
	b.tensorInfo(0, "w.f32", F32, []int{2, 3}, f32)
	b.tensorInfo(1, "w.q8", Q8_0, []int{2, 32}, q8)
	b.tensorInfo(2, "w.f16", F16, []int{3}, f16)
	return b, b.finish()
}

func TestParseGGUFAllTypes(t *testing.T) {
	for _, version := range []uint32{1, 2, 3} {
		for _, align := range []int{32, 64, 1} {
			t.Run(fmt.Sprintf("v%d/align%d", version, align), func(t *testing.T) {
				b, data := buildAllTypes(version, align)
				g, err := ParseGGUF("all.gguf", data)
				if err != nil {
					t.Fatal(err)
				}
				want := allTypesMeta()
				if align != 32 {
					want = append(want, MetaKV{"general.alignment", uint32(align)})
				}
				if diff := cmp.Diff(want, g.MetaKVs()); diff != "" {
					t.Errorf("metadata (-want +got):\n%s", diff)
				}
				if g.Version != version || g.Alignment != align {
					t.Errorf("version %d alignment %d", g.Version, g.Alignment)
				}
				if g.DataOffset != int64(b.tensors[0].dataStart) || g.DataOffset%int64(align) != 0 {
					t.Errorf("DataOffset %d, want %d", g.DataOffset, b.tensors[0].dataStart)
				}
				for i, bt := range b.tensors {
					ti := g.Tensors[i]
					if ti.Name != bt.name || ti.DType != bt.dtype || !cmp.Equal(ti.Shape, bt.shape) || ti.Offset != int64(bt.dataStart) || ti.Size != int64(len(bt.data)) {
						t.Errorf("tensor %d = %+v, want %s %s %v at %d", i, ti, bt.name, bt.dtype, bt.shape, bt.dataStart)
					}
					if !bytes.Equal(g.TensorAt(i).Data, bt.data) {
						t.Errorf("tensor %s data differs", bt.name)
					}
				}
				x, err := g.TensorAt(1).F32()
				if err != nil || x[0] != 5 || len(x) != 64 {
					t.Errorf("Q8_0 tensor: %v %v", x[:2], err)
				}
				if s, _ := g.String("general.architecture"); s != "llama" {
					t.Errorf("String = %q", s)
				}
				if v, ok := g.Int("t.u32"); !ok || v != 4000000000 {
					t.Errorf("Int(t.u32) = %d %v", v, ok)
				}
				if _, ok := g.Int("t.u64"); ok {
					t.Error("Int(2^63) should not fit int64")
				}
				if v, ok := g.Float("t.f32"); !ok || v != float64(float32(-1.5e-3)) {
					t.Errorf("Float = %v", v)
				}
				if v, ok := g.Bool("t.bool"); !ok || !v {
					t.Error("Bool")
				}
				if v, ok := g.Strings("a.str"); !ok || len(v) != 3 {
					t.Error("Strings")
				}
				if _, err := g.Tensor("nope"); !errors.Is(err, ErrNotFound) {
					t.Errorf("Tensor(nope): %v", err)
				}
			})
		}
	}
}

// TestParseGGUFTruncated cuts the file at every byte: the error must name the
// field the cut falls in, at that field's offset, or the earlier count that
// the bytes left cannot hold.
func TestParseGGUFTruncated(t *testing.T) {
	for _, version := range []uint32{1, 3} {
		b, data := buildAllTypes(version, 64)
		causes := map[error]int{}
		for n := 0; n < len(data); n++ {
			field, at, cause := b.expectCut(n)
			causes[cause]++
			_, err := ParseGGUF("cut.gguf", data[:n])
			if cause == nil { // only in the padding after the last tensor
				if n < b.tensors[len(b.tensors)-1].dataEnd || err != nil {
					t.Fatalf("v%d cut at %d: %v", version, n, err)
				}
				continue
			}
			wantFormatError(t, err, "cut.gguf", field, int64(at), cause)
		}
		if causes[ErrTruncated] == 0 || causes[ErrTooLarge] == 0 {
			t.Errorf("v%d: cuts by expected cause: %v", version, causes)
		}
		t.Logf("v%d: %d cuts: %d truncated, %d count too large", version, len(data), causes[ErrTruncated], causes[ErrTooLarge])
	}
}

func TestWriteGGUFRoundTrip(t *testing.T) {
	for _, version := range []uint32{1, 2, 3} {
		b, want := buildAllTypes(version, 64)
		meta := append(allTypesMeta(), MetaKV{"general.alignment", uint32(64)})
		var tensors []*Tensor
		for _, bt := range b.tensors {
			tensors = append(tensors, &Tensor{Name: bt.name, DType: bt.dtype, Shape: bt.shape, Data: bt.data})
		}
		var buf bytes.Buffer
		if err := WriteGGUF(&buf, version, meta, tensors); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("v%d: WriteGGUF output differs from the test builder's", version)
		}
	}
}

// TestWriteGGUFReproducesFiles rewrites each vendored GGUF from its parsed
// form: the bytes must be those llama.cpp wrote.
func TestWriteGGUFReproducesFiles(t *testing.T) {
	for _, f := range []string{"stories260K.gguf", "tiny-llama3-q4_0.gguf", "tiny-qwen3-f32.gguf", "tiny-qwen3moe-q8_0.gguf"} {
		orig, err := os.ReadFile(modelsDir + f)
		if err != nil {
			t.Fatal(err)
		}
		g, err := ParseGGUF(f, orig)
		if err != nil {
			t.Fatal(err)
		}
		var tensors []*Tensor
		for i := range g.Tensors {
			tensors = append(tensors, g.TensorAt(i))
		}
		var buf bytes.Buffer
		if err := WriteGGUF(&buf, g.Version, g.MetaKVs(), tensors); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), orig) {
			n := 0
			for n < len(orig) && n < buf.Len() && orig[n] == buf.Bytes()[n] {
				n++
			}
			t.Errorf("%s: rewritten file differs at byte %d (lengths %d, %d)", f, n, buf.Len(), len(orig))
		}
	}
}

func TestWriteGGUFErrors(t *testing.T) {
	ok := &Tensor{Name: "w", DType: F32, Shape: []int{1}, Data: make([]byte, 4)}
	for _, c := range []struct {
		name    string
		version uint32
		meta    []MetaKV
		tensors []*Tensor
		cause   error
	}{
		{"version", 4, nil, nil, ErrUnsupported},
		{"int value", 3, []MetaKV{{"k", 1}}, nil, ErrUnsupported},
		{"map value", 3, []MetaKV{{"k", map[string]int{}}}, nil, ErrUnsupported},
		{"array of scalars in []any", 3, []MetaKV{{"k", []any{uint8(1)}}}, nil, ErrUnsupported},
		{"deep nesting", 3, []MetaKV{{"k", []any{[]any{[]any{[]any{[]uint8{}}}}}}}, nil, ErrTooLarge},
		{"alignment type", 3, []MetaKV{{"general.alignment", uint64(32)}}, nil, ErrCorrupt},
		{"alignment 24", 3, []MetaKV{{"general.alignment", uint32(24)}}, nil, ErrCorrupt},
		{"planar tensor", 3, nil, []*Tensor{{Name: "q", DType: Q4, Shape: []int{32}, Data: make([]byte, 20)}}, ErrUnsupported},
		{"size mismatch", 3, nil, []*Tensor{{Name: "w", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}}, ErrCorrupt},
		{"5 dims", 3, nil, []*Tensor{{Name: "w", DType: F32, Shape: []int{1, 1, 1, 1, 1}, Data: make([]byte, 4)}}, ErrTooLarge},
	} {
		if c.tensors == nil {
			c.tensors = []*Tensor{ok}
		}
		err := WriteGGUF(&bytes.Buffer{}, c.version, c.meta, c.tensors)
		if !errors.Is(err, c.cause) {
			t.Errorf("%s: %v, want %v", c.name, err, c.cause)
		}
	}
}

// simpleGGUF is a v3 file with one metadata entry and two F32 tensors.
func simpleGGUF(meta ...MetaKV) (*ggufBuilder, []byte) {
	b := newBuilder(3)
	if len(meta) == 0 {
		meta = []MetaKV{{"general.architecture", "llama"}}
	}
	b.header(2, uint64(len(meta)))
	for i, kv := range meta {
		b.kv(i, kv.Key, kv.Value)
	}
	b.tensorInfo(0, "a", F32, []int{2, 4}, make([]byte, 32))
	b.tensorInfo(1, "b", F32, []int{8}, make([]byte, 32))
	return b, b.finish()
}

func TestParseGGUFErrors(t *testing.T) {
	put32 := func(d []byte, at int, v uint32) { binary.LittleEndian.PutUint32(d[at:], v) }
	put64 := func(d []byte, at int, v uint64) { binary.LittleEndian.PutUint64(d[at:], v) }
	type tc struct {
		name  string
		edit  func(b *ggufBuilder, d []byte) (field string, at int)
		cause error
	}
	for _, c := range []tc{
		{"bad magic", func(b *ggufBuilder, d []byte) (string, int) { d[0] = 'X'; return "magic", 0 }, ErrBadMagic},
		{"version 0", func(b *ggufBuilder, d []byte) (string, int) { put32(d, 4, 0); return "version", 4 }, ErrUnsupported},
		{"version 4", func(b *ggufBuilder, d []byte) (string, int) { put32(d, 4, 4); return "version", 4 }, ErrUnsupported},
		{"absurd tensor count", func(b *ggufBuilder, d []byte) (string, int) { put64(d, 8, 1<<60); return "tensor count", 8 }, ErrTooLarge},
		{"absurd metadata count", func(b *ggufBuilder, d []byte) (string, int) {
			put64(d, 16, math.MaxUint64)
			return "metadata count", 16
		}, ErrTooLarge},
		{"absurd key length", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("metadata key 0 length")
			put64(d, s.start, 1<<40)
			return "metadata key 0 length", s.start
		}, ErrTooLarge},
		{"key length past end", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("metadata key 0 length")
			put64(d, s.start, uint64(len(d)))
			return "metadata key 0 length", s.start
		}, ErrTruncated},
		{"unknown value type", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("metadata general.architecture type")
			put32(d, s.start, 13)
			return "metadata general.architecture type", s.start
		}, ErrUnsupported},
		{"unknown tensor type", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("tensor a type")
			put32(d, s.start, 99)
			return "tensor a type", s.start
		}, ErrUnsupported},
		{"planar type id in a file", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("tensor a type")
			put32(d, s.start, uint32(Q4))
			return "tensor a type", s.start
		}, ErrUnsupported},
		{"row not a whole block", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("tensor a type")
			put32(d, s.start, uint32(Q8_0)) // rows of 4 elements cannot be Q8_0
			return "tensor a shape", b.spanOf("tensor a dimension 0").start
		}, ErrCorrupt},
		{"too many dimensions", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("tensor a dimension count")
			put32(d, s.start, 5)
			return "tensor a dimension count", s.start
		}, ErrTooLarge},
		{"absurd dimension", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("tensor a dimension 1")
			put64(d, s.start, 1<<41)
			return "tensor a dimension 1", s.start
		}, ErrTooLarge},
		{"element count overflow", func(b *ggufBuilder, d []byte) (string, int) {
			put64(d, b.spanOf("tensor a dimension 0").start, 1<<32)
			s := b.spanOf("tensor a dimension 1")
			put64(d, s.start, 1<<30)
			return "tensor a dimension 1", s.start
		}, ErrTooLarge},
		{"shape larger than data", func(b *ggufBuilder, d []byte) (string, int) {
			put64(d, b.spanOf("tensor b dimension 0").start, 1<<20)
			return "tensor b offset", b.spanOf("tensor b offset").start
		}, ErrTruncated},
		{"offset past end", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("tensor b offset")
			put64(d, s.start, 1<<62)
			return "tensor b offset", s.start
		}, ErrTruncated},
		{"offset at max", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("tensor b offset")
			put64(d, s.start, math.MaxUint64&^31)
			return "tensor b offset", s.start
		}, ErrTruncated},
		{"misaligned offset", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("tensor b offset")
			put64(d, s.start, 8)
			return "tensor b offset", s.start
		}, ErrCorrupt},
		{"overlapping tensors", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("tensor b offset")
			put64(d, s.start, 0)
			return "tensor b offset", s.start
		}, ErrCorrupt},
		{"duplicate tensor", func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("tensor 1 name length")
			d[s.start+8] = 'a'
			return "tensor 1 name", s.start
		}, ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, data := simpleGGUF()
			field, at := c.edit(b, data)
			_, err := ParseGGUF("bad.gguf", data)
			wantFormatError(t, err, "bad.gguf", field, int64(at), c.cause)
		})
	}
	// An offset near 2^64 is reported as it is, not wrapped to a small
	// range by adding the data section's offset.
	b, data := simpleGGUF()
	off := uint64(math.MaxUint64 &^ 31)
	put64(data, b.spanOf("tensor b offset").start, off)
	if _, err := ParseGGUF("bad.gguf", data); err == nil || !strings.Contains(err.Error(), fmt.Sprint(off)) {
		t.Errorf("offset %d: %v, want the offset named", off, err)
	}
}

func TestParseGGUFMetaErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		meta  []MetaKV
		edit  func(b *ggufBuilder, d []byte) (string, int)
		cause error
	}{
		{"alignment 0", []MetaKV{{"general.alignment", uint32(0)}}, nil, ErrCorrupt},
		{"alignment 48", []MetaKV{{"general.alignment", uint32(48)}}, nil, ErrCorrupt},
		{"alignment 2^30", []MetaKV{{"general.alignment", uint32(1 << 30)}}, nil, ErrCorrupt},
		{"alignment as uint64", []MetaKV{{"general.alignment", uint64(32)}}, nil, ErrCorrupt},
		{"alignment as string", []MetaKV{{"general.alignment", "32"}}, nil, ErrCorrupt},
		{"duplicate key", []MetaKV{{"k", uint8(1)}, {"k", uint8(2)}}, func(b *ggufBuilder, d []byte) (string, int) {
			return "metadata key k", b.spanOf("metadata key 1 length").start
		}, ErrCorrupt},
		{"bool 2", []MetaKV{{"k", true}}, func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("metadata k")
			d[s.start] = 2
			return "metadata k", s.start
		}, ErrCorrupt},
		{"bool array 7", []MetaKV{{"k", []bool{true, false}}}, func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("metadata k")
			d[s.start+1] = 7
			return "metadata k[1]", s.start + 1
		}, ErrCorrupt},
		{"absurd array count", []MetaKV{{"k", []uint64{1}}}, func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("metadata k count")
			binary.LittleEndian.PutUint64(d[s.start:], 1<<61)
			return "metadata k count", s.start
		}, ErrTooLarge},
		{"absurd string array count", []MetaKV{{"k", []string{"x"}}}, func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("metadata k count")
			binary.LittleEndian.PutUint64(d[s.start:], 1<<40)
			return "metadata k count", s.start
		}, ErrTooLarge},
		{"unknown element type", []MetaKV{{"k", []uint8{1}}}, func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("metadata k element type")
			binary.LittleEndian.PutUint32(d[s.start:], 77)
			return "metadata k element type", s.start
		}, ErrUnsupported},
		{"nesting too deep", []MetaKV{{"k", []any{[]any{[]any{[]uint8{}}}}}}, func(b *ggufBuilder, d []byte) (string, int) {
			s := b.spanOf("metadata k[0][0][0] element type")
			binary.LittleEndian.PutUint32(d[s.start:], 9) // one more level of arrays
			return "metadata k[0][0][0] element type", s.start
		}, ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, data := simpleGGUF(c.meta...)
			var field string
			var at int
			if c.edit != nil {
				field, at = c.edit(b, data)
			} else { // the alignment value, which follows its type field
				field, at = "metadata general.alignment", b.spanOf("metadata general.alignment type").end
			}
			_, err := ParseGGUF("meta.gguf", data)
			wantFormatError(t, err, "meta.gguf", field, int64(at), c.cause)
		})
	}
}

func TestReadGGUFFiles(t *testing.T) {
	g, err := ReadGGUF(modelsDir + "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != 3 || g.Alignment != 32 || len(g.Tensors) != 48 {
		t.Errorf("stories260K: v%d align %d %d tensors", g.Version, g.Alignment, len(g.Tensors))
	}
	if a, _ := g.String("general.architecture"); a != "llama" {
		t.Errorf("architecture %q", a)
	}
	if toks, _ := g.Strings("tokenizer.ggml.tokens"); len(toks) != 512 {
		t.Errorf("%d tokens", len(toks))
	}
	emb, err := g.Tensor("token_embd.weight")
	if err != nil || !cmp.Equal(emb.Shape, []int{512, 64}) || emb.DType != F32 {
		t.Fatalf("token_embd: %+v %v", emb, err)
	}
	if _, err := ReadGGUF(modelsDir + "no-such.gguf"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestDequantizeVendoredFiles dequantises every tensor of every vendored GGUF.
func TestDequantizeVendoredFiles(t *testing.T) {
	entries, err := os.ReadDir(modelsDir)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".gguf") {
			continue
		}
		files++
		g, err := ReadGGUF(modelsDir + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for i := range g.Tensors {
			x, err := g.TensorAt(i).F32()
			if err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			for _, v := range x {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%s %s: non-finite value", e.Name(), g.Tensors[i].Name)
				}
			}
		}
	}
	if files < 10 {
		t.Errorf("only %d GGUF files", files)
	}
}

// TestOpenGGUF: reading only the header gives the same table and metadata as
// reading the whole file, and the same tensor bytes on demand; a small first
// read exercises the retry with longer prefixes.
func TestOpenGGUF(t *testing.T) {
	defer func(n int64) { openGGUFPrefix = n }(openGGUFPrefix)
	for _, prefix := range []int64{1 << 20, 64} {
		openGGUFPrefix = prefix
		for _, f := range []string{"stories260K.gguf", "tiny-qwen3moe-q4_0.gguf"} {
			want, err := ReadGGUF(modelsDir + f)
			if err != nil {
				t.Fatal(err)
			}
			g, err := OpenGGUF(modelsDir + f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.MetaKVs(), g.MetaKVs()); diff != "" {
				t.Errorf("%s metadata (-read +open):\n%s", f, diff)
			}
			if !cmp.Equal(want.Tensors, g.Tensors) || want.DataOffset != g.DataOffset || want.Version != g.Version {
				t.Errorf("%s: tensor tables differ", f)
			}
			for i := range g.Tensors {
				tt, err := g.ReadTensor(i)
				if err != nil || !bytes.Equal(tt.Data, want.TensorAt(i).Data) {
					t.Fatalf("%s %s: %v", f, g.Tensors[i].Name, err)
				}
			}
			if g.TensorAt(0).Data != nil {
				t.Error("TensorAt on an opened file should have nil Data")
			}
			if err := g.Close(); err != nil {
				t.Error(err)
			}
			if _, err := g.Tensor(g.Tensors[0].Name); !errors.Is(err, os.ErrClosed) {
				t.Errorf("after Close: %v", err)
			}
		}
	}
	// Cut files give OpenGGUF the errors ParseGGUF gives.
	openGGUFPrefix = 16
	_, data := buildAllTypes(3, 64)
	dir := t.TempDir()
	for n := 0; n < len(data); n += 7 {
		p := filepath.Join(dir, "cut.gguf")
		if err := os.WriteFile(p, data[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		_, want := ParseGGUF(p, data[:n])
		g, err := OpenGGUF(p)
		if fmt.Sprint(err) != fmt.Sprint(want) {
			t.Fatalf("cut at %d: OpenGGUF says %v, ParseGGUF %v", n, err, want)
		}
		if g != nil {
			g.Close()
		}
	}
}
