package loader

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// MetaKV is one GGUF metadata entry. Value is one of the Go types GGUF.Meta
// holds: uint8, int8, uint16, int16, uint32, int32, float32, bool, string,
// uint64, int64, float64, a slice of one of these, or []any whose elements
// are themselves such slices (an array of arrays).
type MetaKV struct {
	Key   string
	Value any
}

// WriteGGUF writes a GGUF file of the given version (1, 2 or 3) holding meta
// in order and tensors in order, each tensor's data aligned to the
// general.alignment entry of meta (a uint32; 32 when absent). Tensors must
// have ggml types (not the planar shard layouts) and data matching their shape.
func WriteGGUF(w io.Writer, version uint32, meta []MetaKV, tensors []*Tensor) error {
	if version < 1 || version > 3 {
		return fmt.Errorf("%w: GGUF version %d", ErrUnsupported, version)
	}
	align := uint64(32)
	for _, kv := range meta {
		if kv.Key == "general.alignment" {
			a, ok := kv.Value.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 || a > maxGGUFAlignment {
				return fmt.Errorf("%w: general.alignment %v (%T)", ErrCorrupt, kv.Value, kv.Value)
			}
			align = uint64(a)
		}
	}
	gw := &ggufWriter{w: bufio.NewWriter(w), v2: version >= 2}
	gw.raw([]byte("GGUF"))
	gw.u32(version)
	gw.count(uint64(len(tensors)))
	gw.count(uint64(len(meta)))
	for _, kv := range meta {
		gw.str(kv.Key)
		if err := gw.value(kv.Value, true, 0); err != nil {
			return fmt.Errorf("metadata %s: %w", kv.Key, err)
		}
	}
	var off uint64
	for _, t := range tensors {
		if t.DType >= 1000 || !t.DType.Known() {
			return fmt.Errorf("tensor %s: %w: %s is not a ggml type", t.Name, ErrUnsupported, t.DType)
		}
		if len(t.Shape) > maxGGUFDims {
			return fmt.Errorf("tensor %s: %w: %d dimensions", t.Name, ErrTooLarge, len(t.Shape))
		}
		if err := t.CheckSize(); err != nil {
			return err
		}
		gw.str(t.Name)
		gw.u32(uint32(len(t.Shape)))
		for i := len(t.Shape) - 1; i >= 0; i-- {
			gw.count(uint64(t.Shape[i]))
		}
		gw.u32(uint32(t.DType))
		gw.u64(off)
		off += (uint64(len(t.Data)) + align - 1) / align * align
	}
	gw.pad(align)
	for _, t := range tensors {
		gw.raw(t.Data)
		gw.pad(align)
	}
	if gw.err != nil {
		return gw.err
	}
	return gw.w.Flush()
}

type ggufWriter struct {
	w   *bufio.Writer
	n   uint64
	v2  bool
	err error
}

func (g *ggufWriter) raw(b []byte) {
	if g.err != nil {
		return
	}
	var n int
	n, g.err = g.w.Write(b)
	g.n += uint64(n)
}

func (g *ggufWriter) u32(v uint32) { g.raw(binary.LittleEndian.AppendUint32(nil, v)) }
func (g *ggufWriter) u64(v uint64) { g.raw(binary.LittleEndian.AppendUint64(nil, v)) }

func (g *ggufWriter) count(n uint64) {
	if g.v2 {
		g.u64(n)
		return
	}
	if n > math.MaxUint32 && g.err == nil {
		g.err = fmt.Errorf("%w: count %d does not fit GGUF v1", ErrTooLarge, n)
	}
	g.u32(uint32(n))
}

func (g *ggufWriter) str(s string) {
	g.count(uint64(len(s)))
	g.raw([]byte(s))
}

func (g *ggufWriter) pad(align uint64) {
	if r := g.n % align; r != 0 {
		g.raw(make([]byte, align-r))
	}
}

// typeOf returns the GGUF type of a scalar Go value, or of a slice's elements.
func typeOf(v any) (typ uint32, elem uint32, ok bool) {
	switch v.(type) {
	case uint8:
		return ggufUint8, 0, true
	case int8:
		return ggufInt8, 0, true
	case uint16:
		return ggufUint16, 0, true
	case int16:
		return ggufInt16, 0, true
	case uint32:
		return ggufUint32, 0, true
	case int32:
		return ggufInt32, 0, true
	case float32:
		return ggufFloat32, 0, true
	case bool:
		return ggufBool, 0, true
	case string:
		return ggufString, 0, true
	case uint64:
		return ggufUint64, 0, true
	case int64:
		return ggufInt64, 0, true
	case float64:
		return ggufFloat64, 0, true
	case []uint8:
		return ggufArray, ggufUint8, true
	case []int8:
		return ggufArray, ggufInt8, true
	case []uint16:
		return ggufArray, ggufUint16, true
	case []int16:
		return ggufArray, ggufInt16, true
	case []uint32:
		return ggufArray, ggufUint32, true
	case []int32:
		return ggufArray, ggufInt32, true
	case []float32:
		return ggufArray, ggufFloat32, true
	case []bool:
		return ggufArray, ggufBool, true
	case []string:
		return ggufArray, ggufString, true
	case []uint64:
		return ggufArray, ggufUint64, true
	case []int64:
		return ggufArray, ggufInt64, true
	case []float64:
		return ggufArray, ggufFloat64, true
	case []any:
		return ggufArray, ggufArray, true
	}
	return 0, 0, false
}

// value writes v, preceded by its type when withType (array elements share
// the array's element type).
func (g *ggufWriter) value(v any, withType bool, depth int) error {
	typ, et, ok := typeOf(v)
	if !ok {
		return fmt.Errorf("%w: metadata value of Go type %T", ErrUnsupported, v)
	}
	if withType {
		g.u32(typ)
	}
	switch x := v.(type) {
	case uint8:
		g.raw([]byte{x})
	case int8:
		g.raw([]byte{byte(x)})
	case uint16:
		g.raw(binary.LittleEndian.AppendUint16(nil, x))
	case int16:
		g.raw(binary.LittleEndian.AppendUint16(nil, uint16(x)))
	case uint32:
		g.u32(x)
	case int32:
		g.u32(uint32(x))
	case float32:
		g.u32(math.Float32bits(x))
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		g.raw([]byte{b})
	case string:
		g.str(x)
	case uint64:
		g.u64(x)
	case int64:
		g.u64(uint64(x))
	case float64:
		g.u64(math.Float64bits(x))
	case []string:
		g.u32(et)
		g.count(uint64(len(x)))
		for _, s := range x {
			g.str(s)
		}
	case []any:
		if depth+1 >= maxArrayDepth {
			return fmt.Errorf("%w: arrays nested deeper than %d", ErrTooLarge, maxArrayDepth)
		}
		g.u32(et)
		g.count(uint64(len(x)))
		for _, e := range x {
			if t, _, _ := typeOf(e); t != ggufArray {
				return fmt.Errorf("%w: element of an array of arrays is %T", ErrUnsupported, e)
			}
			if err := g.value(e, false, depth+1); err != nil {
				return err
			}
		}
	default: // slices of fixed-size scalars
		return g.fixedSlice(et, v)
	}
	return nil
}

func (g *ggufWriter) fixedSlice(et uint32, v any) error {
	var b []byte
	switch x := v.(type) {
	case []uint8:
		b = x
	case []int8:
		for _, e := range x {
			b = append(b, byte(e))
		}
	case []bool:
		for _, e := range x {
			c := byte(0)
			if e {
				c = 1
			}
			b = append(b, c)
		}
	case []uint16:
		for _, e := range x {
			b = binary.LittleEndian.AppendUint16(b, e)
		}
	case []int16:
		for _, e := range x {
			b = binary.LittleEndian.AppendUint16(b, uint16(e))
		}
	case []uint32:
		for _, e := range x {
			b = binary.LittleEndian.AppendUint32(b, e)
		}
	case []int32:
		for _, e := range x {
			b = binary.LittleEndian.AppendUint32(b, uint32(e))
		}
	case []float32:
		for _, e := range x {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(e))
		}
	case []uint64:
		for _, e := range x {
			b = binary.LittleEndian.AppendUint64(b, e)
		}
	case []int64:
		for _, e := range x {
			b = binary.LittleEndian.AppendUint64(b, uint64(e))
		}
	case []float64:
		for _, e := range x {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e))
		}
	}
	g.u32(et)
	g.count(uint64(len(b)) / elemSize(et))
	g.raw(b)
	return nil
}
