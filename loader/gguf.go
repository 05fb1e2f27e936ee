package loader

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
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
	maxGGUFDims      = 4
	maxStringLen     = 1 << 28
	maxArrayDepth    = 4
	maxGGUFAlignment = 1 << 24
)

// GGUF is a parsed GGUF file. Tensor data is referenced, not copied.
type GGUF struct {
	File       string
	Version    uint32
	Alignment  int
	DataOffset int64
	// Keys lists metadata keys in file order; Meta maps them to Go values:
	// uint8, int8, uint16, int16, uint32, int32, float32, bool, string,
	// uint64, int64, float64, or a slice of one of these ([]any for arrays
	// of arrays).
	Keys    []string
	Meta    map[string]any
	Tensors []TensorInfo
	data    []byte      // the whole file (ReadGGUF, ParseGGUF)
	file    io.ReaderAt // or the open file (OpenGGUF, OpenGGUFAt)
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

// ParseGGUF parses GGUF v1, v2 or v3 from data, naming errors after file.
// Malformed input yields a *FormatError; no count read from data is trusted
// before it is checked against the bytes that remain.
func ParseGGUF(file string, data []byte) (*GGUF, error) {
	r := &reader{file: file, data: data, size: int64(len(data))}
	g, err := r.parse()
	if err != nil {
		return nil, err
	}
	g.data = data
	return g, nil
}

// reader walks a GGUF file's bytes, naming each field it reads. data holds
// the file, or its first bytes when size is larger: reading past them fails
// with errNeedMore so that OpenGGUF can read more and start again.
type reader struct {
	file string
	data []byte
	size int64
	off  int64
	v2   bool // 64-bit counts and lengths (GGUF v2 and v3)
}

// errNeedMore asks OpenGGUF for a longer prefix of the file.
var errNeedMore = errors.New("gguf: header runs past the bytes read")

func (r *reader) errAt(off int64, field string, err error) error {
	return &FormatError{File: r.file, Field: field, Offset: off, Err: err}
}

func (r *reader) rest() uint64 { return uint64(r.size - r.off) }

// take returns the next n bytes, or ErrTruncated at the current offset.
func (r *reader) take(n uint64, field string) ([]byte, error) {
	if n > r.rest() {
		return nil, r.errAt(r.off, field, fmt.Errorf("%w: %d bytes needed, %d left", ErrTruncated, n, r.rest()))
	}
	if r.off+int64(n) > int64(len(r.data)) {
		return nil, errNeedMore
	}
	b := r.data[r.off : r.off+int64(n)]
	r.off += int64(n)
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

// count reads a count or length: uint32 in GGUF v1, uint64 later.
func (r *reader) count(field string) (uint64, error) {
	if r.v2 {
		return r.u64(field)
	}
	v, err := r.u32(field)
	return uint64(v), err
}

func (r *reader) countSize() uint64 {
	if r.v2 {
		return 8
	}
	return 4
}

// need fails with ErrTooLarge at the count field that began at at when n
// items of at least min bytes each cannot fit in the bytes left.
func (r *reader) need(n, min uint64, at int64, field string) error {
	if n > r.rest()/min {
		return r.errAt(at, field, fmt.Errorf("%w: %d entries of at least %d bytes, %d bytes left", ErrTooLarge, n, min, r.rest()))
	}
	return nil
}

// str reads a length-prefixed string. A length past the end of the data is
// reported at the length field.
func (r *reader) str(field string) (string, error) {
	at := r.off
	n, err := r.count(field + " length")
	if err != nil {
		return "", err
	}
	if n > maxStringLen {
		return "", r.errAt(at, field+" length", fmt.Errorf("%w: string of %d bytes", ErrTooLarge, n))
	}
	if n > r.rest() {
		return "", r.errAt(at, field+" length", fmt.Errorf("%w: string of %d bytes, %d left", ErrTruncated, n, r.rest()))
	}
	b, err := r.take(n, field)
	return string(b), err
}

// Minimum encoded sizes, used to bound counts before any allocation.
func (r *reader) minKV() uint64         { return r.countSize() + 4 + 1 } // empty key, type, 1-byte value
func (r *reader) minTensorInfo() uint64 { return r.countSize() + 4 + 4 + 8 }

func (r *reader) parse() (*GGUF, error) {
	magic, err := r.take(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != "GGUF" {
		return nil, r.errAt(0, "magic", fmt.Errorf("%w: %q is not \"GGUF\"", ErrBadMagic, magic))
	}
	g := &GGUF{File: r.file, Meta: map[string]any{}, Alignment: 32}
	if g.Version, err = r.u32("version"); err != nil {
		return nil, err
	}
	if g.Version < 1 || g.Version > 3 {
		return nil, r.errAt(4, "version", fmt.Errorf("%w: GGUF version %d", ErrUnsupported, g.Version))
	}
	r.v2 = g.Version >= 2
	nTensors, err := r.count("tensor count")
	if err != nil {
		return nil, err
	}
	kvAt := r.off
	nKV, err := r.count("metadata count")
	if err != nil {
		return nil, err
	}
	if err := r.need(nTensors, r.minTensorInfo(), 8, "tensor count"); err != nil {
		return nil, err
	}
	if err := r.need(nKV, r.minKV(), kvAt, "metadata count"); err != nil {
		return nil, err
	}
	alignAt := int64(-1)
	for i := uint64(0); i < nKV; i++ {
		keyAt := r.off
		key, err := r.str(fmt.Sprintf("metadata key %d", i))
		if err != nil {
			return nil, err
		}
		if _, dup := g.Meta[key]; dup {
			return nil, r.errAt(keyAt, "metadata key "+key, fmt.Errorf("%w: duplicate key", ErrCorrupt))
		}
		typ, err := r.u32("metadata " + key + " type")
		if err != nil {
			return nil, err
		}
		if key == "general.alignment" {
			alignAt = r.off
		}
		val, err := r.value(typ, "metadata "+key, 0)
		if err != nil {
			return nil, err
		}
		g.Keys = append(g.Keys, key)
		g.Meta[key] = val
	}
	if a, ok := g.Meta["general.alignment"]; ok {
		av, ok := a.(uint32)
		if !ok || av == 0 || av&(av-1) != 0 || av > maxGGUFAlignment {
			return nil, r.errAt(alignAt, "metadata general.alignment", fmt.Errorf("%w: %v (%T) is not a power of two uint32 up to %d", ErrCorrupt, a, a, maxGGUFAlignment))
		}
		g.Alignment = int(av)
	}
	offsetAt := make([]int64, 0, nTensors)
	rel := make([]uint64, 0, nTensors)
	names := make(map[string]bool, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		ti, at, off, err := r.tensorInfo(i, names)
		if err != nil {
			return nil, err
		}
		g.Tensors = append(g.Tensors, ti)
		offsetAt = append(offsetAt, at)
		rel = append(rel, off)
	}
	align := int64(g.Alignment)
	g.DataOffset = (r.off + align - 1) / align * align
	if err := g.placeTensors(r, rel, offsetAt); err != nil {
		return nil, err
	}
	return g, nil
}

// tensorInfo reads one tensor table entry. It returns the entry, where its
// offset field lies and the offset relative to the data section.
func (r *reader) tensorInfo(i uint64, names map[string]bool) (TensorInfo, int64, uint64, error) {
	var ti TensorInfo
	nameAt := r.off
	name, err := r.str(fmt.Sprintf("tensor %d name", i))
	if err != nil {
		return ti, 0, 0, err
	}
	if names[name] {
		return ti, 0, 0, r.errAt(nameAt, fmt.Sprintf("tensor %d name", i), fmt.Errorf("%w: duplicate tensor %q", ErrCorrupt, name))
	}
	names[name] = true
	field := "tensor " + name
	ndAt := r.off
	nd, err := r.u32(field + " dimension count")
	if err != nil {
		return ti, 0, 0, err
	}
	if nd > maxGGUFDims {
		return ti, 0, 0, r.errAt(ndAt, field+" dimension count", fmt.Errorf("%w: %d dimensions", ErrTooLarge, nd))
	}
	shapeAt := r.off
	shape := make([]int, nd)
	elems := uint64(1)
	for d := uint32(0); d < nd; d++ {
		dimAt := r.off
		dfield := fmt.Sprintf("%s dimension %d", field, d)
		n, err := r.count(dfield)
		if err != nil {
			return ti, 0, 0, err
		}
		if n > 1<<40 || (n != 0 && elems > (1<<50)/n) {
			return ti, 0, 0, r.errAt(dimAt, dfield, fmt.Errorf("%w: %d elements", ErrTooLarge, n))
		}
		elems *= n
		shape[int(nd)-1-int(d)] = int(n)
	}
	typAt := r.off
	typ, err := r.u32(field + " type")
	if err != nil {
		return ti, 0, 0, err
	}
	dt := DType(typ)
	if !dt.Known() || dt >= 1000 {
		return ti, 0, 0, r.errAt(typAt, field+" type", fmt.Errorf("%w: ggml type %d", ErrUnsupported, typ))
	}
	rowLen := 1
	if nd > 0 {
		rowLen = shape[nd-1]
	}
	rowBytes, err := dt.RowBytes(rowLen)
	if err != nil {
		return ti, 0, 0, r.errAt(shapeAt, field+" shape", err)
	}
	size := int64(rowBytes)
	if rowLen > 0 {
		size *= int64(elems / uint64(rowLen))
	}
	at := r.off
	off, err := r.u64(field + " offset")
	if err != nil {
		return ti, 0, 0, err
	}
	return TensorInfo{Name: name, DType: dt, Shape: shape, Size: size}, at, off, nil
}

// placeTensors resolves the relative data offsets: each must be aligned,
// lie within the file, and not overlap another tensor.
func (g *GGUF) placeTensors(r *reader, rel []uint64, offsetAt []int64) error {
	fileLen := uint64(r.size)
	for i := range g.Tensors {
		t := &g.Tensors[i]
		field := "tensor " + t.Name + " offset"
		if rel[i]%uint64(g.Alignment) != 0 {
			return r.errAt(offsetAt[i], field, fmt.Errorf("%w: offset %d not aligned to %d", ErrCorrupt, rel[i], g.Alignment))
		}
		if rel[i] > fileLen { // before adding: the sum could wrap 2^64
			return r.errAt(offsetAt[i], field, fmt.Errorf("%w: offset %d past the end of the file (%d bytes)", ErrTruncated, rel[i], fileLen))
		}
		start := uint64(g.DataOffset) + rel[i]
		if start > fileLen || uint64(t.Size) > fileLen-start {
			return r.errAt(offsetAt[i], field, fmt.Errorf("%w: tensor data [%d, +%d) past the end of the file (%d bytes)", ErrTruncated, start, t.Size, fileLen))
		}
		t.Offset = int64(start)
	}
	order := make([]int, len(g.Tensors))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return g.Tensors[order[a]].Offset < g.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		prev, cur := g.Tensors[order[k-1]], g.Tensors[order[k]]
		if cur.Size > 0 && prev.Offset+prev.Size > cur.Offset {
			return r.errAt(offsetAt[order[k]], "tensor "+cur.Name+" offset", fmt.Errorf("%w: data overlaps tensor %s", ErrCorrupt, prev.Name))
		}
	}
	return nil
}

// elemSize is the encoded size of a fixed-size metadata type, 0 for others.
func elemSize(typ uint32) uint64 {
	switch typ {
	case ggufUint8, ggufInt8, ggufBool:
		return 1
	case ggufUint16, ggufInt16:
		return 2
	case ggufUint32, ggufInt32, ggufFloat32:
		return 4
	case ggufUint64, ggufInt64, ggufFloat64:
		return 8
	}
	return 0
}

func (r *reader) value(typ uint32, field string, depth int) (any, error) {
	if n := elemSize(typ); n > 0 {
		at := r.off
		b, err := r.take(n, field)
		if err != nil {
			return nil, err
		}
		if typ == ggufBool && b[0] > 1 {
			return nil, r.errAt(at, field, fmt.Errorf("%w: bool byte %d", ErrCorrupt, b[0]))
		}
		return scalar(typ, b), nil
	}
	switch typ {
	case ggufString:
		return r.str(field)
	case ggufArray:
		return r.array(field, depth)
	}
	return nil, r.errAt(r.off-4, field+" type", fmt.Errorf("%w: metadata value type %d", ErrUnsupported, typ))
}

func scalar(typ uint32, b []byte) any {
	switch typ {
	case ggufUint8:
		return b[0]
	case ggufInt8:
		return int8(b[0])
	case ggufBool:
		return b[0] != 0
	case ggufUint16:
		return binary.LittleEndian.Uint16(b)
	case ggufInt16:
		return int16(binary.LittleEndian.Uint16(b))
	case ggufUint32:
		return binary.LittleEndian.Uint32(b)
	case ggufInt32:
		return int32(binary.LittleEndian.Uint32(b))
	case ggufFloat32:
		return math.Float32frombits(binary.LittleEndian.Uint32(b))
	case ggufUint64:
		return binary.LittleEndian.Uint64(b)
	case ggufInt64:
		return int64(binary.LittleEndian.Uint64(b))
	case ggufFloat64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return nil
}

func (r *reader) array(field string, depth int) (any, error) {
	etAt := r.off
	et, err := r.u32(field + " element type")
	if err != nil {
		return nil, err
	}
	var min uint64
	switch {
	case elemSize(et) > 0:
		min = elemSize(et)
	case et == ggufString:
		min = r.countSize()
	case et == ggufArray:
		if depth+1 >= maxArrayDepth {
			return nil, r.errAt(etAt, field+" element type", fmt.Errorf("%w: arrays nested deeper than %d", ErrTooLarge, maxArrayDepth))
		}
		min = 4 + r.countSize()
	default:
		return nil, r.errAt(etAt, field+" element type", fmt.Errorf("%w: metadata value type %d", ErrUnsupported, et))
	}
	nAt := r.off
	n, err := r.count(field + " count")
	if err != nil {
		return nil, err
	}
	if err := r.need(n, min, nAt, field+" count"); err != nil {
		return nil, err
	}
	if size := elemSize(et); size > 0 {
		at := r.off
		b, err := r.take(n*size, field)
		if err != nil {
			return nil, err
		}
		return fixedArray(r, et, b, at, field)
	}
	if et == ggufString {
		out := make([]string, 0, n)
		for i := uint64(0); i < n; i++ {
			s, err := r.str(fmt.Sprintf("%s[%d]", field, i))
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	out := make([]any, 0, n)
	for i := uint64(0); i < n; i++ {
		v, err := r.array(fmt.Sprintf("%s[%d]", field, i), depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func fixedArray(r *reader, et uint32, b []byte, at int64, field string) (any, error) {
	switch et {
	case ggufUint8:
		return append([]uint8(nil), b...), nil
	case ggufInt8:
		return conv(b, 1, func(b []byte) int8 { return int8(b[0]) }), nil
	case ggufBool:
		for i, c := range b {
			if c > 1 {
				return nil, r.errAt(at+int64(i), fmt.Sprintf("%s[%d]", field, i), fmt.Errorf("%w: bool byte %d", ErrCorrupt, c))
			}
		}
		return conv(b, 1, func(b []byte) bool { return b[0] != 0 }), nil
	case ggufUint16:
		return conv(b, 2, binary.LittleEndian.Uint16), nil
	case ggufInt16:
		return conv(b, 2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) }), nil
	case ggufUint32:
		return conv(b, 4, binary.LittleEndian.Uint32), nil
	case ggufInt32:
		return conv(b, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) }), nil
	case ggufFloat32:
		return conv(b, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }), nil
	case ggufUint64:
		return conv(b, 8, binary.LittleEndian.Uint64), nil
	case ggufInt64:
		return conv(b, 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }), nil
	}
	return conv(b, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }), nil
}

func conv[T any](b []byte, size int, f func([]byte) T) []T {
	out := make([]T, len(b)/size)
	for i := range out {
		out[i] = f(b[i*size:])
	}
	return out
}

// Tensor returns the named tensor: from ReadGGUF or ParseGGUF its Data
// references the file's bytes; from OpenGGUF it is read from the file.
func (g *GGUF) Tensor(name string) (*Tensor, error) {
	i, err := g.find(name)
	if err != nil {
		return nil, err
	}
	return g.ReadTensor(i)
}

// LazyTensor returns the named tensor unread: nil Data and a Load that
// reads it as ReadTensor does.
func (g *GGUF) LazyTensor(name string) (*Tensor, error) {
	i, err := g.find(name)
	if err != nil {
		return nil, err
	}
	t := g.TensorAt(i)
	t.Data = nil
	t.Load = func() ([]byte, error) {
		r, err := g.ReadTensor(i)
		if err != nil {
			return nil, err
		}
		return r.Data, nil
	}
	return t, nil
}

// find returns the index of the named tensor in Tensors.
func (g *GGUF) find(name string) (int, error) {
	i := slices.IndexFunc(g.Tensors, func(t TensorInfo) bool { return t.Name == name })
	if i < 0 {
		return -1, &FormatError{File: g.File, Field: "tensor " + name, Offset: -1, Err: ErrNotFound}
	}
	return i, nil
}

// TensorAt returns the i-th tensor of a GGUF from ReadGGUF or ParseGGUF, its
// Data referencing the file's bytes. For one from OpenGGUF, whose data is not
// in memory, use ReadTensor: TensorAt's result has nil Data there.
func (g *GGUF) TensorAt(i int) *Tensor {
	ti := g.Tensors[i]
	t := &Tensor{Name: ti.Name, DType: ti.DType, Shape: append([]int(nil), ti.Shape...)}
	if g.data != nil {
		end := ti.Offset + ti.Size
		t.Data = g.data[ti.Offset:end:end]
	}
	return t
}

// ReadTensor returns the i-th tensor, reading its data from the file when
// the GGUF came from OpenGGUF.
func (g *GGUF) ReadTensor(i int) (*Tensor, error) {
	t := g.TensorAt(i)
	if g.data != nil {
		return t, nil
	}
	if g.file == nil {
		return nil, fmt.Errorf("gguf %s: %w", g.File, os.ErrClosed)
	}
	ti := g.Tensors[i]
	t.Data = make([]byte, ti.Size)
	if n, err := g.file.ReadAt(t.Data, ti.Offset); n != len(t.Data) {
		if err == nil || errors.Is(err, io.EOF) {
			err = ErrTruncated
		}
		return nil, &FormatError{File: g.File, Field: "tensor " + ti.Name + " data", Offset: ti.Offset + int64(n), Err: err}
	}
	return t, nil
}

// openGGUFPrefix is how much of a file OpenGGUF reads first; it doubles the
// read until the header fits.
var openGGUFPrefix int64 = 1 << 20

// OpenGGUF parses the header of the GGUF file at path, reading no more of
// the file than the header needs; ReadTensor and Tensor read tensor data on
// demand. Close releases the file. A part of a split GGUF
// (NAME-00001-of-0000N.gguf, any part) opens every part, from path's
// folder (OpenGGUFParts).
func OpenGGUF(path string) (*GGUF, error) {
	if names := GGUFSplitNames(filepath.Base(path)); len(names) > 1 {
		var parts []GGUFPart
		for _, name := range names {
			p := filepath.Join(filepath.Dir(path), name)
			f, err := os.Open(p)
			if err == nil {
				var st os.FileInfo
				if st, err = f.Stat(); err == nil {
					parts = append(parts, GGUFPart{Name: p, R: f, Size: st.Size()})
					continue
				}
				f.Close()
			}
			(&partsReader{parts: parts}).Close()
			return nil, fmt.Errorf("gguf %s: part %s of the split: %w", path, name, err)
		}
		return OpenGGUFParts(parts)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	g, err := OpenGGUFAt(path, f, st.Size())
	if err != nil {
		f.Close()
	}
	return g, err
}

// OpenGGUFAt is OpenGGUF over r, size bytes long, named file in errors: a
// file read over the network with Range requests, or a browser's File.
// Close closes r if it is an io.Closer.
func OpenGGUFAt(file string, r io.ReaderAt, size int64) (*GGUF, error) {
	n := min(size, openGGUFPrefix)
	for {
		buf := make([]byte, n)
		if got, err := r.ReadAt(buf, 0); int64(got) != n {
			if err == nil || errors.Is(err, io.EOF) {
				err = ErrTruncated
			}
			return nil, &FormatError{File: file, Field: "header", Offset: int64(got), Err: err}
		}
		rd := &reader{file: file, data: buf, size: size}
		g, err := rd.parse()
		if err == errNeedMore {
			n = min(size, 2*n)
			continue
		}
		if err != nil {
			return nil, err
		}
		g.file = r
		return g, nil
	}
}

// Close closes the file of a GGUF from OpenGGUF or OpenGGUFAt; it does
// nothing otherwise.
func (g *GGUF) Close() error {
	c, ok := g.file.(io.Closer)
	g.file = nil
	if !ok {
		return nil
	}
	return c.Close()
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

// MetaKVs returns the metadata in file order, as WriteGGUF takes it.
func (g *GGUF) MetaKVs() []MetaKV {
	out := make([]MetaKV, len(g.Keys))
	for i, k := range g.Keys {
		out[i] = MetaKV{Key: k, Value: g.Meta[k]}
	}
	return out
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
