package loader

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// GGUF metadata value types.
const (
	ggufUint8   = 0
	ggufInt8    = 1
	ggufUint16  = 2
	ggufInt16   = 3
	ggufUint32  = 4
	ggufInt32   = 5
	ggufFloat32 = 6
	ggufBool    = 7
	ggufString  = 8
	ggufArray   = 9
	ggufUint64  = 10
	ggufInt64   = 11
	ggufFloat64 = 12
)

// Limits that keep a corrupt header from asking for absurd allocations.
const (
	maxGGUFDims   = 4
	maxStringLen  = 1 << 28
	maxArrayDepth = 4
)

// GGUF is a parsed GGUF file. Tensor data is referenced, not copied.
type GGUF struct {
	File       string
	Version    uint32
	Alignment  int
	DataOffset int64
	// Keys lists metadata keys in file order; Meta maps them to Go values:
	// uint8, int8, uint16, int16, uint32, int32, float32, bool, string,
	// uint64, int64, float64, or a slice of one of these ([]any for nested
	// arrays).
	Keys    []string
	Meta    map[string]any
	Tensors []TensorInfo
	data    []byte
}

// TensorInfo is one entry of the GGUF tensor table.
type TensorInfo struct {
	Name   string
	DType  DType
	Shape  []int // row-major (reversed from GGUF's ne order)
	Offset int64 // absolute byte offset in the file
	Size   int64
}

// ReadGGUF reads and parses a GGUF file.
func ReadGGUF(path string) (*GGUF, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseGGUF(path, data)
}

type reader struct {
	file string
	data []byte
	off  int64
}

func (r *reader) fail(field string, err error) error {
	return &FormatError{File: r.file, Field: field, Offset: r.off, Err: err}
}

func (r *reader) take(n int64, field string) ([]byte, error) {
	if n < 0 || r.off+n > int64(len(r.data)) || r.off+n < r.off {
		return nil, r.fail(field, ErrTruncated)
	}
	b := r.data[r.off : r.off+n]
	r.off += n
	return b, nil
}

func (r *reader) u32(field string) (uint32, error) {
	b, err := r.take(4, field)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64(field string) (uint64, error) {
	b, err := r.take(8, field)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *reader) count(v2 bool, field string) (uint64, error) {
	if v2 {
		return r.u64(field)
	}
	v, err := r.u32(field)
	return uint64(v), err
}

func (r *reader) str(v2 bool, field string) (string, error) {
	start := r.off
	n, err := r.count(v2, field+" length")
	if err != nil {
		return "", err
	}
	if n > maxStringLen || n > uint64(len(r.data))-uint64(r.off) {
		r.off = start
		return "", r.fail(field+" length", fmt.Errorf("%w: string of %d bytes", ErrTruncated, n))
	}
	b, _ := r.take(int64(n), field)
	return string(b), nil
}

// ParseGGUF parses GGUF v1, v2 or v3 from data, naming errors after file.
func ParseGGUF(file string, data []byte) (*GGUF, error) {
	r := &reader{file: file, data: data}
	magic, err := r.take(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != "GGUF" {
		r.off = 0
		return nil, r.fail("magic", fmt.Errorf("%w: %q is not \"GGUF\"", ErrBadMagic, magic))
	}
	g := &GGUF{File: file, Meta: map[string]any{}, data: data, Alignment: 32}
	if g.Version, err = r.u32("version"); err != nil {
		return nil, err
	}
	if g.Version < 1 || g.Version > 3 {
		r.off -= 4
		return nil, r.fail("version", fmt.Errorf("%w: GGUF version %d", ErrUnsupported, g.Version))
	}
	v2 := g.Version >= 2
	nTensors, err := r.count(v2, "tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := r.count(v2, "metadata count")
	if err != nil {
		return nil, err
	}
	// Every KV needs at least 12 bytes and every tensor info at least 24.
	rest := uint64(len(data)) - uint64(r.off)
	if nKV > rest/12 {
		return nil, r.fail("metadata count", fmt.Errorf("%w: %d entries in %d bytes", ErrTooLarge, nKV, rest))
	}
	if nTensors > rest/24 {
		return nil, r.fail("tensor count", fmt.Errorf("%w: %d tensors in %d bytes", ErrTooLarge, nTensors, rest))
	}
	for i := uint64(0); i < nKV; i++ {
		key, err := r.str(v2, fmt.Sprintf("metadata key %d", i))
		if err != nil {
			return nil, err
		}
		typ, err := r.u32("metadata " + key + " type")
		if err != nil {
			return nil, err
		}
		val, err := r.value(v2, typ, "metadata "+key, 0)
		if err != nil {
			return nil, err
		}
		if _, dup := g.Meta[key]; !dup {
			g.Keys = append(g.Keys, key)
		}
		g.Meta[key] = val
	}
	if a, ok := g.Meta["general.alignment"]; ok {
		av, ok := a.(uint32)
		if !ok || av == 0 || av&(av-1) != 0 || av > 1<<16 {
			return nil, &FormatError{File: file, Field: "metadata general.alignment", Offset: -1, Err: fmt.Errorf("%w: %v", ErrCorrupt, a)}
		}
		g.Alignment = int(av)
	}
	type rel struct {
		off   uint64
		at    int64
		field string
	}
	rels := make([]rel, 0, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		name, err := r.str(v2, fmt.Sprintf("tensor %d name", i))
		if err != nil {
			return nil, err
		}
		field := "tensor " + name
		nd, err := r.u32(field + " dimension count")
		if err != nil {
			return nil, err
		}
		if nd > maxGGUFDims {
			r.off -= 4
			return nil, r.fail(field+" dimension count", fmt.Errorf("%w: %d dimensions", ErrTooLarge, nd))
		}
		shape := make([]int, nd)
		elems := uint64(1)
		for d := uint32(0); d < nd; d++ {
			n, err := r.count(v2, field+" shape")
			if err != nil {
				return nil, err
			}
			if n > 1<<40 || (n != 0 && elems > (1<<50)/n) {
				r.off -= 8
				return nil, r.fail(field+" shape", fmt.Errorf("%w: dimension %d", ErrTooLarge, n))
			}
			elems *= n
			shape[int(nd)-1-int(d)] = int(n)
		}
		typ, err := r.u32(field + " type")
		if err != nil {
			return nil, err
		}
		dt := DType(typ)
		if !dt.Known() || dt >= 1000 {
			r.off -= 4
			return nil, r.fail(field+" type", fmt.Errorf("%w: ggml type %d", ErrUnsupported, typ))
		}
		rowLen := 1
		if nd > 0 {
			rowLen = shape[nd-1]
		}
		rowBytes, err := dt.RowBytes(rowLen)
		if err != nil {
			r.off -= 4
			return nil, r.fail(field+" shape", err)
		}
		size := int64(rowBytes)
		if rowLen > 0 {
			size *= int64(elems / uint64(rowLen))
		}
		at := r.off
		off, err := r.u64(field + " offset")
		if err != nil {
			return nil, err
		}
		g.Tensors = append(g.Tensors, TensorInfo{Name: name, DType: dt, Shape: shape, Size: size})
		rels = append(rels, rel{off, at, field + " offset"})
	}
	align := int64(g.Alignment)
	g.DataOffset = (r.off + align - 1) / align * align
	for i := range g.Tensors {
		t := &g.Tensors[i]
		rl := rels[i]
		if rl.off%uint64(align) != 0 {
			return nil, &FormatError{File: file, Field: rl.field, Offset: rl.at, Err: fmt.Errorf("%w: offset %d not aligned to %d", ErrCorrupt, rl.off, align)}
		}
		end := uint64(g.DataOffset) + rl.off + uint64(t.Size)
		if rl.off > uint64(len(data)) || end > uint64(len(data)) {
			return nil, &FormatError{File: file, Field: rl.field, Offset: rl.at, Err: fmt.Errorf("%w: tensor data [%d, %d) past end of file (%d bytes)", ErrTruncated, g.DataOffset+int64(rl.off), end, len(data))}
		}
		t.Offset = g.DataOffset + int64(rl.off)
	}
	return g, nil
}

func (r *reader) value(v2 bool, typ uint32, field string, depth int) (any, error) {
	switch typ {
	case ggufUint8, ggufInt8, ggufBool:
		b, err := r.take(1, field)
		if err != nil {
			return nil, err
		}
		switch typ {
		case ggufUint8:
			return b[0], nil
		case ggufInt8:
			return int8(b[0]), nil
		}
		if b[0] > 1 {
			r.off--
			return nil, r.fail(field, fmt.Errorf("%w: bool byte %d", ErrCorrupt, b[0]))
		}
		return b[0] == 1, nil
	case ggufUint16, ggufInt16:
		b, err := r.take(2, field)
		if err != nil {
			return nil, err
		}
		v := binary.LittleEndian.Uint16(b)
		if typ == ggufInt16 {
			return int16(v), nil
		}
		return v, nil
	case ggufUint32, ggufInt32, ggufFloat32:
		v, err := r.u32(field)
		if err != nil {
			return nil, err
		}
		switch typ {
		case ggufInt32:
			return int32(v), nil
		case ggufFloat32:
			return math.Float32frombits(v), nil
		}
		return v, nil
	case ggufUint64, ggufInt64, ggufFloat64:
		v, err := r.u64(field)
		if err != nil {
			return nil, err
		}
		switch typ {
		case ggufInt64:
			return int64(v), nil
		case ggufFloat64:
			return math.Float64frombits(v), nil
		}
		return v, nil
	case ggufString:
		return r.str(v2, field)
	case ggufArray:
		if depth >= maxArrayDepth {
			return nil, r.fail(field, fmt.Errorf("%w: arrays nested deeper than %d", ErrTooLarge, maxArrayDepth))
		}
		et, err := r.u32(field + " element type")
		if err != nil {
			return nil, err
		}
		n, err := r.count(v2, field+" length")
		if err != nil {
			return nil, err
		}
		minSize := uint64(1)
		switch et {
		case ggufUint16, ggufInt16:
			minSize = 2
		case ggufUint32, ggufInt32, ggufFloat32:
			minSize = 4
		case ggufUint64, ggufInt64, ggufFloat64, ggufString:
			minSize = 8
			if et == ggufString && !v2 {
				minSize = 4
			}
		case ggufArray:
			minSize = 12
		}
		if n > (uint64(len(r.data))-uint64(r.off))/minSize {
			return nil, r.fail(field+" length", fmt.Errorf("%w: %d elements", ErrTooLarge, n))
		}
		return r.array(v2, et, int(n), field, depth)
	}
	return nil, r.fail(field, fmt.Errorf("%w: metadata value type %d", ErrUnsupported, typ))
}

func (r *reader) array(v2 bool, et uint32, n int, field string, depth int) (any, error) {
	switch et {
	case ggufUint8:
		b, err := r.take(int64(n), field)
		if err != nil {
			return nil, err
		}
		return append([]uint8(nil), b...), nil
	case ggufInt8:
		return readArray[int8](r, n, 1, field, func(b []byte) int8 { return int8(b[0]) })
	case ggufBool:
		return readArray[bool](r, n, 1, field, func(b []byte) bool { return b[0] != 0 })
	case ggufUint16:
		return readArray[uint16](r, n, 2, field, binary.LittleEndian.Uint16)
	case ggufInt16:
		return readArray[int16](r, n, 2, field, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
	case ggufUint32:
		return readArray[uint32](r, n, 4, field, binary.LittleEndian.Uint32)
	case ggufInt32:
		return readArray[int32](r, n, 4, field, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
	case ggufFloat32:
		return readArray[float32](r, n, 4, field, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case ggufUint64:
		return readArray[uint64](r, n, 8, field, binary.LittleEndian.Uint64)
	case ggufInt64:
		return readArray[int64](r, n, 8, field, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	case ggufFloat64:
		return readArray[float64](r, n, 8, field, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	case ggufString:
		out := make([]string, n)
		for i := range out {
			s, err := r.str(v2, field)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	out := make([]any, n)
	for i := range out {
		v, err := r.value(v2, et, field, depth+1)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func readArray[T any](r *reader, n, size int, field string, conv func([]byte) T) ([]T, error) {
	b, err := r.take(int64(n)*int64(size), field)
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		out[i] = conv(b[i*size:])
	}
	return out, nil
}

// Tensor returns the named tensor, its Data referencing the file's bytes.
func (g *GGUF) Tensor(name string) (*Tensor, error) {
	for i := range g.Tensors {
		if g.Tensors[i].Name == name {
			return g.TensorAt(i), nil
		}
	}
	return nil, &FormatError{File: g.File, Field: "tensor " + name, Offset: -1, Err: ErrNotFound}
}

// TensorAt returns the i-th tensor of the table.
func (g *GGUF) TensorAt(i int) *Tensor {
	ti := g.Tensors[i]
	return &Tensor{Name: ti.Name, DType: ti.DType, Shape: append([]int(nil), ti.Shape...), Data: g.data[ti.Offset : ti.Offset+ti.Size]}
}

// Has reports whether the named tensor exists.
func (g *GGUF) Has(name string) bool {
	for i := range g.Tensors {
		if g.Tensors[i].Name == name {
			return true
		}
	}
	return false
}

// String returns a string metadata value.
func (g *GGUF) String(key string) (string, bool) {
	s, ok := g.Meta[key].(string)
	return s, ok
}

// Int returns an integer metadata value of any integer type.
func (g *GGUF) Int(key string) (int64, bool) {
	switch v := g.Meta[key].(type) {
	case uint8:
		return int64(v), true
	case int8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case int16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case int32:
		return int64(v), true
	case uint64:
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}

// Float returns a numeric metadata value as float64.
func (g *GGUF) Float(key string) (float64, bool) {
	switch v := g.Meta[key].(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	i, ok := g.Int(key)
	return float64(i), ok
}

// Bool returns a bool metadata value.
func (g *GGUF) Bool(key string) (bool, bool) {
	b, ok := g.Meta[key].(bool)
	return b, ok
}

// Strings returns a string-array metadata value.
func (g *GGUF) Strings(key string) ([]string, bool) {
	s, ok := g.Meta[key].([]string)
	return s, ok
}
