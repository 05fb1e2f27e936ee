package loader

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// A split GGUF (llama.cpp's gguf-split) is NAME-00001-of-0000N.gguf to
// NAME-0000N-of-0000N.gguf: each part a GGUF of its own holding some of
// the tensors, the first part all the model's metadata, every part the
// keys split.no (0-based), split.count and, in the first, split.tensors.count.

var splitName = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// GGUFSplitNames returns the names of every part of the split GGUF that
// name (a file name, path or URL path; any part) belongs to, in order, or
// nil when name is not a part's.
func GGUFSplitNames(name string) []string {
	m := splitName.FindStringSubmatch(name)
	if m == nil {
		return nil
	}
	n, _ := strconv.Atoi(m[3])
	if n < 1 || n > 99999 {
		return nil
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d-of-%05d.gguf", m[1], i+1, n)
	}
	return names
}

// GGUFPart is one file of a split GGUF, read through R (Size bytes).
type GGUFPart struct {
	Name string
	R    io.ReaderAt
	Size int64
}

// OpenGGUFParts opens a GGUF split over parts, in order, as one: the
// first part's metadata and every part's tensors, each read from its own
// part. One part is OpenGGUFAt. The parts' split.* keys must agree with
// their number and order; a *FormatError names the part and key that do
// not. Close closes every part's reader that is an io.Closer.
func OpenGGUFParts(parts []GGUFPart) (*GGUF, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("gguf: %w: no parts", ErrNotFound)
	}
	if len(parts) == 1 {
		return OpenGGUFAt(parts[0].Name, parts[0].R, parts[0].Size)
	}
	var g *GGUF
	multi := &partsReader{}
	names := map[string]string{}
	var at int64
	for i, p := range parts {
		pg, err := OpenGGUFAt(p.Name, p.R, p.Size)
		if err != nil {
			multi.Close()
			return nil, err
		}
		multi.parts = append(multi.parts, p)
		multi.starts = append(multi.starts, at)
		bad := func(key string, err error) (*GGUF, error) {
			multi.Close()
			return nil, &FormatError{File: p.Name, Field: "metadata " + key, Offset: -1, Err: err}
		}
		if no, ok := metaInt(pg.Meta["split.no"]); !ok || no != int64(i) {
			return bad("split.no", fmt.Errorf("%w: %v, want %d (part %d of %d)", ErrCorrupt, pg.Meta["split.no"], i, i+1, len(parts)))
		}
		if n, ok := metaInt(pg.Meta["split.count"]); !ok || n != int64(len(parts)) {
			return bad("split.count", fmt.Errorf("%w: %v, want %d", ErrCorrupt, pg.Meta["split.count"], len(parts)))
		}
		own := pg.Tensors
		if i == 0 {
			g = pg
			g.Tensors = nil
		}
		for _, t := range own {
			if was, dup := names[t.Name]; dup {
				return bad("tensor "+t.Name, fmt.Errorf("%w: also in %s", ErrCorrupt, was))
			}
			names[t.Name] = p.Name
			t.Offset += at
			g.Tensors = append(g.Tensors, t)
		}
		at += p.Size
	}
	if n, ok := metaInt(g.Meta["split.tensors.count"]); ok && n != int64(len(g.Tensors)) {
		multi.Close()
		return nil, &FormatError{File: parts[0].Name, Field: "metadata split.tensors.count", Offset: -1,
			Err: fmt.Errorf("%w: %d, the parts hold %d tensors", ErrCorrupt, n, len(g.Tensors))}
	}
	g.file = multi
	return g, nil
}

// metaInt is an integer metadata value of any width.
func metaInt(v any) (int64, bool) {
	switch x := v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// partsReader reads the parts as one file, part i from starts[i] on.
type partsReader struct {
	parts  []GGUFPart
	starts []int64
}

func (m *partsReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		i := len(m.starts) - 1
		for i > 0 && m.starts[i] > off+int64(n) {
			i--
		}
		part, rel := m.parts[i], off+int64(n)-m.starts[i]
		if rel >= part.Size {
			return n, io.EOF
		}
		want := min(int64(len(p)-n), part.Size-rel)
		got, err := part.R.ReadAt(p[n:n+int(want)], rel)
		n += got
		if err != nil && !(err == io.EOF && int64(got) == want) {
			return n, err
		}
	}
	return n, nil
}

func (m *partsReader) Close() error {
	var first error
	for _, p := range m.parts {
		if c, ok := p.R.(io.Closer); ok {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// WriteGGUFSplit writes g (from ReadGGUF, or opened) as n parts in dir, as
// llama.cpp's gguf-split does: NAME-0000i-of-0000n.gguf for base name
// NAME, the tensors in order spread evenly, the first part with g's
// metadata, every part with the split.* keys. It returns the parts' paths.
func WriteGGUFSplit(dir, name string, g *GGUF, n int) ([]string, error) {
	if n < 1 || n > len(g.Tensors) {
		return nil, fmt.Errorf("gguf split: %d parts of %d tensors", n, len(g.Tensors))
	}
	var paths []string
	for i := range n {
		var meta []MetaKV
		if i == 0 {
			meta = g.MetaKVs()
		} else if a, ok := g.Meta["general.alignment"]; ok {
			meta = []MetaKV{{Key: "general.alignment", Value: a}}
		}
		meta = append(meta, MetaKV{Key: "split.no", Value: uint16(i)}, MetaKV{Key: "split.count", Value: uint16(n)},
			MetaKV{Key: "split.tensors.count", Value: int32(len(g.Tensors))})
		var ts []*Tensor
		for k := i * len(g.Tensors) / n; k < (i+1)*len(g.Tensors)/n; k++ {
			t, err := g.ReadTensor(k)
			if err != nil {
				return nil, err
			}
			ts = append(ts, t)
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-%05d-of-%05d.gguf", name, i+1, n))
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		err = WriteGGUF(f, g.Version, meta, ts)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
