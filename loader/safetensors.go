package loader

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// maxSafetensorsHeader is the safetensors format's own limit on the JSON
// header (100 MB).
const maxSafetensorsHeader = 100_000_000

// safetensorsDTypes maps the safetensors dtype names this package reads.
var safetensorsDTypes = map[string]DType{"F32": F32, "F16": F16, "BF16": BF16}

// Safetensors is an opened Hugging Face safetensors model: a single file, or
// the shards listed by a folder's model.safetensors.index.json. Headers are
// read and validated when it is opened; tensor data is read on demand.
type Safetensors struct {
	Path     string            // the file or folder that was opened
	Metadata map[string]string // the __metadata__ of each file, merged
	Tensors  []SafetensorsInfo // by shard, then by data offset
	files    []*shardFile
	byName   map[string]int
}

// SafetensorsInfo describes one tensor of a safetensors file.
type SafetensorsInfo struct {
	Name   string
	DType  DType
	Shape  []int  // row-major, as stored
	File   string // the shard holding the data
	Offset int64  // absolute byte offset in File
	Size   int64
	shard  int
}

type shardFile struct {
	path string
	r    io.ReaderAt
	size int64
	c    io.Closer
}

// OpenSafetensors opens path: a .safetensors file, or a folder holding
// model.safetensors.index.json (sharded), model.safetensors, or exactly one
// *.safetensors file. Close releases the files.
func OpenSafetensors(path string) (*Safetensors, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	s := &Safetensors{Path: path, Metadata: map[string]string{}, byName: map[string]int{}}
	if !st.IsDir() {
		if err := s.addFile(path); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	index := filepath.Join(path, "model.safetensors.index.json")
	if _, err := os.Stat(index); err == nil {
		if err := s.openIndex(index); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	single := filepath.Join(path, "model.safetensors")
	if _, err := os.Stat(single); err != nil {
		matches, _ := filepath.Glob(filepath.Join(path, "*.safetensors"))
		if len(matches) != 1 {
			return nil, &FormatError{File: path, Field: "safetensors files", Offset: -1,
				Err: fmt.Errorf("%w: no model.safetensors.index.json or model.safetensors, and %d *.safetensors files", ErrNotFound, len(matches))}
		}
		single = matches[0]
	}
	if err := s.addFile(single); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// openIndex opens every shard named by a model.safetensors.index.json and
// checks that each tensor it lists is in the shard it names.
func (s *Safetensors) openIndex(index string) error {
	raw, err := os.ReadFile(index)
	if err != nil {
		return err
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return &FormatError{File: index, Field: "index", Offset: jsonOffset(err, 0), Err: fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	if len(idx.WeightMap) == 0 {
		return &FormatError{File: index, Field: "weight_map", Offset: -1, Err: fmt.Errorf("%w: no tensors", ErrCorrupt)}
	}
	var shards []string
	seen := map[string]bool{}
	names := make([]string, 0, len(idx.WeightMap))
	for name, shard := range idx.WeightMap {
		names = append(names, name)
		if shard == "" || shard != filepath.Base(shard) || strings.ContainsAny(shard, `/\`) || shard == ".." || shard == "." {
			return &FormatError{File: index, Field: "weight_map " + name, Offset: -1, Err: fmt.Errorf("%w: shard %q is not a file name in the folder", ErrCorrupt, shard)}
		}
		if !seen[shard] {
			seen[shard] = true
			shards = append(shards, shard)
		}
	}
	sort.Strings(shards)
	dir := filepath.Dir(index)
	for _, sh := range shards {
		if err := s.addFile(filepath.Join(dir, sh)); err != nil {
			return err
		}
	}
	sort.Strings(names)
	for _, name := range names {
		want := filepath.Join(dir, idx.WeightMap[name])
		i, ok := s.byName[name]
		if !ok || s.Tensors[i].File != want {
			return &FormatError{File: index, Field: "weight_map " + name, Offset: -1, Err: fmt.Errorf("%w: tensor not in %s", ErrNotFound, idx.WeightMap[name])}
		}
	}
	return nil
}

func (s *Safetensors) addFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	shard := len(s.files)
	s.files = append(s.files, &shardFile{path: path, r: f, size: st.Size(), c: f})
	infos, meta, err := parseSafetensors(path, f, st.Size())
	if err != nil {
		return err
	}
	for k, v := range meta {
		s.Metadata[k] = v
	}
	for _, ti := range infos {
		if j, dup := s.byName[ti.Name]; dup {
			return &FormatError{File: path, Field: "tensor " + ti.Name, Offset: -1, Err: fmt.Errorf("%w: also in %s", ErrCorrupt, s.Tensors[j].File)}
		}
		ti.shard = shard
		s.byName[ti.Name] = len(s.Tensors)
		s.Tensors = append(s.Tensors, ti)
	}
	return nil
}

// Close closes the files.
func (s *Safetensors) Close() error {
	var first error
	for _, f := range s.files {
		if f.c != nil {
			if err := f.c.Close(); err != nil && first == nil {
				first = err
			}
			f.c, f.r = nil, nil
		}
	}
	return first
}

// Has reports whether the named tensor exists.
func (s *Safetensors) Has(name string) bool { _, ok := s.byName[name]; return ok }

// Names lists the tensor names in the order of Tensors.
func (s *Safetensors) Names() []string {
	out := make([]string, len(s.Tensors))
	for i, t := range s.Tensors {
		out[i] = t.Name
	}
	return out
}

// Tensor reads the named tensor's data.
func (s *Safetensors) Tensor(name string) (*Tensor, error) {
	i, ok := s.byName[name]
	if !ok {
		return nil, &FormatError{File: s.Path, Field: "tensor " + name, Offset: -1, Err: ErrNotFound}
	}
	ti := s.Tensors[i]
	f := s.files[ti.shard]
	if f.r == nil {
		return nil, fmt.Errorf("safetensors %s: %w", s.Path, os.ErrClosed)
	}
	data := make([]byte, ti.Size)
	if n, err := f.r.ReadAt(data, ti.Offset); n != len(data) {
		if errors.Is(err, io.EOF) || err == nil {
			err = ErrTruncated
		}
		return nil, &FormatError{File: ti.File, Field: "tensor " + name + " data", Offset: ti.Offset + int64(n), Err: err}
	}
	return &Tensor{Name: name, DType: ti.DType, Shape: append([]int(nil), ti.Shape...), Data: data}, nil
}

// LazyTensor returns the named tensor unread: nil Data and a Load that
// reads it as Tensor does.
func (s *Safetensors) LazyTensor(name string) (*Tensor, error) {
	i, ok := s.byName[name]
	if !ok {
		return nil, &FormatError{File: s.Path, Field: "tensor " + name, Offset: -1, Err: ErrNotFound}
	}
	ti := s.Tensors[i]
	return &Tensor{Name: name, DType: ti.DType, Shape: append([]int(nil), ti.Shape...), Load: func() ([]byte, error) {
		t, err := s.Tensor(name)
		if err != nil {
			return nil, err
		}
		return t.Data, nil
	}}, nil
}

// jsonOffset returns the byte offset of a JSON decoding error, shifted by
// base, or -1 when the error carries none.
func jsonOffset(err error, base int64) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return base + se.Offset
	case errors.As(err, &te):
		return base + te.Offset
	}
	return -1
}

type safetensorsEntry struct {
	DType       *string  `json:"dtype"`
	Shape       []uint64 `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

// parseSafetensors reads and validates a safetensors header: an 8-byte
// little-endian length, then a JSON object mapping tensor names to dtype,
// shape and data_offsets relative to the data after the header.
func parseSafetensors(file string, r io.ReaderAt, size int64) ([]SafetensorsInfo, map[string]string, error) {
	fail := func(field string, off int64, err error) error {
		return &FormatError{File: file, Field: field, Offset: off, Err: err}
	}
	var lb [8]byte
	if n, _ := r.ReadAt(lb[:], 0); n < 8 {
		return nil, nil, fail("header length", 0, fmt.Errorf("%w: %d-byte file", ErrTruncated, size))
	}
	hlen := binary.LittleEndian.Uint64(lb[:])
	if hlen > maxSafetensorsHeader {
		return nil, nil, fail("header length", 0, fmt.Errorf("%w: %d-byte header", ErrTooLarge, hlen))
	}
	if hlen > uint64(size-8) {
		return nil, nil, fail("header length", 0, fmt.Errorf("%w: %d-byte header in a %d-byte file", ErrTruncated, hlen, size))
	}
	hdr := make([]byte, hlen)
	if n, err := r.ReadAt(hdr, 8); n != len(hdr) {
		return nil, nil, fail("header", 8+int64(n), fmt.Errorf("%w: %v", ErrTruncated, err))
	}
	dataStart := 8 + int64(hlen)
	dataLen := uint64(size - dataStart)
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fail("header", 8, fmt.Errorf("%w: header is not a JSON object", ErrCorrupt))
	}
	var infos []SafetensorsInfo
	var meta map[string]string
	seen := map[string]bool{}
	entryAt := map[string]int64{}
	for dec.More() {
		at := 8 + keyStart(hdr, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fail("header", jsonOffset(err, 8), fmt.Errorf("%w: %v", ErrCorrupt, err))
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, nil, fail("tensor "+name, at, fmt.Errorf("%w: duplicate key", ErrCorrupt))
		}
		seen[name] = true
		if name == "__metadata__" {
			if err := dec.Decode(&meta); err != nil {
				return nil, nil, fail("__metadata__", at, fmt.Errorf("%w: %v", ErrCorrupt, err))
			}
			continue
		}
		var e safetensorsEntry
		if err := dec.Decode(&e); err != nil {
			return nil, nil, fail("tensor "+name, at, fmt.Errorf("%w: %v", ErrCorrupt, err))
		}
		ti, field, err := e.info(name, dataStart, dataLen)
		if err != nil {
			return nil, nil, fail("tensor "+name+" "+field, at, err)
		}
		ti.File = file
		entryAt[name] = at
		infos = append(infos, ti)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fail("header", jsonOffset(err, 8), fmt.Errorf("%w: %v", ErrCorrupt, err))
	}
	if rest := hdr[dec.InputOffset():]; len(bytes.TrimSpace(rest)) != 0 {
		return nil, nil, fail("header", 8+dec.InputOffset(), fmt.Errorf("%w: data after the JSON object", ErrCorrupt))
	}
	sort.SliceStable(infos, func(i, j int) bool { return infos[i].Offset < infos[j].Offset })
	for i := 1; i < len(infos); i++ {
		prev, cur := infos[i-1], infos[i]
		if cur.Offset < prev.Offset+prev.Size && cur.Size > 0 && prev.Size > 0 {
			return nil, nil, fail("tensor "+cur.Name+" data_offsets", entryAt[cur.Name], fmt.Errorf("%w: data overlaps tensor %s", ErrCorrupt, prev.Name))
		}
	}
	return infos, meta, nil
}

// keyStart skips the separators before the next object key.
func keyStart(hdr []byte, off int64) int64 {
	for off < int64(len(hdr)) && strings.IndexByte(" \t\r\n,", hdr[off]) >= 0 {
		off++
	}
	return off
}

// info validates an entry against the data section of dataLen bytes that
// starts at dataStart; on error it names the offending field.
func (e *safetensorsEntry) info(name string, dataStart int64, dataLen uint64) (SafetensorsInfo, string, error) {
	var ti SafetensorsInfo
	if e.DType == nil {
		return ti, "dtype", fmt.Errorf("%w: missing", ErrCorrupt)
	}
	dt, ok := safetensorsDTypes[*e.DType]
	if !ok {
		return ti, "dtype", fmt.Errorf("%w: dtype %q (only F32, F16 and BF16)", ErrUnsupported, *e.DType)
	}
	if e.Shape == nil {
		return ti, "shape", fmt.Errorf("%w: missing", ErrCorrupt)
	}
	if len(e.DataOffsets) != 2 {
		return ti, "data_offsets", fmt.Errorf("%w: %d values, want 2", ErrCorrupt, len(e.DataOffsets))
	}
	elems := uint64(1)
	shape := make([]int, 0, min(len(e.Shape), 8))
	for _, d := range e.Shape {
		if d > 1<<40 || (d != 0 && elems > (1<<50)/d) {
			return ti, "shape", fmt.Errorf("%w: dimension %d", ErrTooLarge, d)
		}
		elems *= d
		shape = append(shape, int(d))
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin > end || end > dataLen {
		return ti, "data_offsets", fmt.Errorf("%w: [%d, %d) outside the %d bytes of data", ErrTruncated, begin, end, dataLen)
	}
	size := elems * uint64(dt.BlockBytes())
	if end-begin != size {
		return ti, "data_offsets", fmt.Errorf("%w: %d bytes for shape %v of %s (%d bytes)", ErrCorrupt, end-begin, shape, *e.DType, size)
	}
	return SafetensorsInfo{Name: name, DType: dt, Shape: shape, Offset: dataStart + int64(begin), Size: int64(size)}, "", nil
}
