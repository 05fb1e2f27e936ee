package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"wasmllm/loader"
)

// Reader reads tensors from a model folder whose shards have been verified
// against the manifest.
type Reader struct {
	m     *Manifest
	fsys  fs.FS
	dir   string // prefix for error messages
	index map[string]int
}

// Open reads dir/manifest.json, validates it, and verifies every shard's
// size and sha256 before returning. A shard that does not match gives a
// *loader.FormatError naming its file (wrapping ErrChecksum for a bad hash).
func Open(dir string) (*Reader, error) {
	return open(os.DirFS(dir), dir)
}

// OpenFS is Open on a file system whose root is the model folder.
func OpenFS(fsys fs.FS) (*Reader, error) {
	return open(fsys, "")
}

func open(fsys fs.FS, dir string) (*Reader, error) {
	f, err := fsys.Open(ManifestFile)
	if err != nil {
		return nil, err
	}
	m, err := decode(f, filepath.Join(dir, ManifestFile))
	f.Close()
	if err != nil {
		return nil, err
	}
	r := &Reader{m: m, fsys: fsys, dir: dir, index: make(map[string]int, len(m.Tensors))}
	for i := range m.Tensors {
		r.index[m.Tensors[i].Name] = i
	}
	for i := range m.Shards {
		if err := r.verify(&m.Shards[i]); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Reader) shardPath(s *Shard) string { return filepath.Join(r.dir, s.File) }

// verify checks one shard's size and sha256.
func (r *Reader) verify(s *Shard) error {
	f, err := r.fsys.Open(s.File)
	if err != nil {
		return &loader.FormatError{File: r.shardPath(s), Field: "shard", Offset: -1, Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return &loader.FormatError{File: r.shardPath(s), Field: "shard", Offset: -1, Err: err}
	}
	if fi.Size() != s.Bytes {
		cause := loader.ErrCorrupt
		if fi.Size() < s.Bytes {
			cause = loader.ErrTruncated
		}
		return &loader.FormatError{File: r.shardPath(s), Field: "shard size", Offset: min(fi.Size(), s.Bytes),
			Err: fmt.Errorf("%w: %d bytes, manifest says %d", cause, fi.Size(), s.Bytes)}
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, s.Bytes+1))
	if err != nil {
		return &loader.FormatError{File: r.shardPath(s), Field: "shard", Offset: n, Err: err}
	}
	if n != s.Bytes {
		return &loader.FormatError{File: r.shardPath(s), Field: "shard size", Offset: min(n, s.Bytes),
			Err: fmt.Errorf("%w: read %d bytes, manifest says %d", loader.ErrTruncated, n, s.Bytes)}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 {
		return &loader.FormatError{File: r.shardPath(s), Field: "sha256", Offset: -1,
			Err: fmt.Errorf("%w: got %s, manifest says %s", ErrChecksum, got, s.SHA256)}
	}
	return nil
}

// Manifest returns the validated manifest.
func (r *Reader) Manifest() *Manifest { return r.m }

// Tensor reads the named tensor's bytes from its shard.
func (r *Reader) Tensor(name string) (*loader.Tensor, error) {
	i, ok := r.index[name]
	if !ok {
		return nil, &loader.FormatError{File: filepath.Join(r.dir, ManifestFile), Field: fmt.Sprintf("tensor %q", name), Offset: -1, Err: loader.ErrNotFound}
	}
	ti := &r.m.Tensors[i]
	d, _ := ti.Type()
	if len(ti.Stack) > 0 { // Validate checked the blocks
		parts := make([]*loader.Tensor, len(ti.Stack))
		for k, name := range ti.Stack {
			p, err := r.Tensor(name)
			if err != nil {
				return nil, err
			}
			parts[k] = p
		}
		return loader.Stacked(ti.Name, parts)
	}
	// Validate bounded each part by its shard's size, which open verified.
	data := make([]byte, ti.Bytes)
	at := int64(0)
	for _, p := range ti.Pieces() {
		if err := r.readPart(ti.Name, p, data[at:at+p.Bytes]); err != nil {
			return nil, err
		}
		at += p.Bytes
	}
	return &loader.Tensor{Name: ti.Name, DType: d, Shape: append([]int{}, ti.Shape...), Data: data}, nil
}

// readPart reads one part of the named tensor into dst.
func (r *Reader) readPart(name string, p Part, dst []byte) error {
	s := &r.m.Shards[p.Shard]
	fe := &loader.FormatError{File: r.shardPath(s), Field: fmt.Sprintf("tensor %q", name), Offset: p.Offset}
	f, err := r.fsys.Open(s.File)
	if err != nil {
		fe.Err = err
		return fe
	}
	defer f.Close()
	if err := readAt(f, dst, p.Offset); err != nil {
		fe.Err = err
		return fe
	}
	return nil
}

// readAt fills p from offset off of f, with ReadAt, Seek, or by skipping.
func readAt(f fs.File, p []byte, off int64) error {
	var n int
	var err error
	switch rf := f.(type) {
	case io.ReaderAt:
		n, err = rf.ReadAt(p, off)
	case io.Seeker:
		if _, err = rf.Seek(off, io.SeekStart); err == nil {
			n, err = io.ReadFull(f, p)
		}
	default:
		if _, err = io.CopyN(io.Discard, f, off); err == nil {
			n, err = io.ReadFull(f, p)
		}
	}
	switch {
	case n == len(p):
		return nil
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: shard changed since it was verified", loader.ErrTruncated)
	}
	return err
}
