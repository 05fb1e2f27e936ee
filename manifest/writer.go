package manifest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"wasmllm/loader"
	"wasmllm/model"
)

// DefaultShardBytes is the browser-friendly default shard size, 32 MiB.
const DefaultShardBytes = 32 << 20

// ErrAborted is returned by a Writer's methods after Abort.
var ErrAborted = errors.New("manifest: writer aborted")

var errClosed = errors.New("manifest: writer closed")

// Writer writes a model folder. Tensors are appended to the current shard in
// Add order, each at an offset aligned to Align; a tensor that does not fit
// in what is left of the shard starts a new one, and a tensor larger than a
// shard is written in parts (TensorInfo.Parts) over as many fresh shards as
// it fills, so no shard is larger than the shard size. Everything is written into a hidden
// temporary folder next to the destination, which Close renames into place;
// any error, and Abort, remove it, so no partial output is ever left.
//
// A Writer is not safe for concurrent use. Callers should defer Abort, which
// does nothing after a successful Close.
type Writer struct {
	dir, tmp   string
	shardBytes int64
	shards     []Shard
	tensors    []TensorInfo
	names      map[string]bool
	files      map[string]bool

	store   Store         // where the files go instead of a folder on disk, if set
	open    bool          // a shard is being written
	f       *os.File      // the current shard on disk
	mem     *bytes.Buffer // or in memory, for store
	partial string
	bw      *bufio.Writer
	h       hash.Hash
	off     int64

	err error
}

// NewWriter starts writing a model folder at dir with shards of at most
// shardBytes (DefaultShardBytes when shardBytes <= 0), rounded down to
// Align. An existing dir is replaced by Close only if it is empty or
// holds a manifest.json.
func NewWriter(dir string, shardBytes int64) (*Writer, error) {
	if shardBytes <= 0 {
		shardBytes = DefaultShardBytes
	}
	if shardBytes > MaxShardBytes {
		return nil, fmt.Errorf("manifest: shard size %d exceeds %d", shardBytes, int64(MaxShardBytes))
	}
	shardBytes = max(shardBytes&^(Align-1), Align)
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if filepath.Dir(dir) == dir {
		return nil, fmt.Errorf("manifest: output %s is a file system root", dir)
	}
	if err := checkReplaceable(dir); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return &Writer{dir: dir, tmp: tmp, shardBytes: shardBytes, names: map[string]bool{}, files: map[string]bool{}}, nil
}

// Store takes a model folder's files from a Writer made by NewStoreWriter:
// each shard under its hashed name as it is finished, the files AddFile
// adds, and manifest.json last (Close), so a folder whose manifest is
// stored is whole. data is the Writer's: copy what must outlive the call.
type Store interface {
	Put(name string, data []byte) error
}

// NewStoreWriter starts writing a model folder named name into s, each
// shard held in memory until it is finished. What Abort or a failure
// leaves in s is s's to remove; it never has a manifest.json.
func NewStoreWriter(name string, shardBytes int64, s Store) (*Writer, error) {
	if shardBytes <= 0 {
		shardBytes = DefaultShardBytes
	}
	if shardBytes > MaxShardBytes {
		return nil, fmt.Errorf("manifest: shard size %d exceeds %d", shardBytes, int64(MaxShardBytes))
	}
	shardBytes = max(shardBytes&^(Align-1), Align)
	return &Writer{dir: name, store: s, mem: &bytes.Buffer{}, shardBytes: shardBytes, names: map[string]bool{}, files: map[string]bool{}}, nil
}

// checkReplaceable refuses to replace anything but a missing or empty folder
// or a model folder.
func checkReplaceable(dir string) error {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("manifest: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("manifest: output %s exists and is not a folder", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(dir, ManifestFile)); err != nil {
		return fmt.Errorf("manifest: output %s is a non-empty folder without %s; refusing to replace it", dir, ManifestFile)
	}
	return nil
}

// Add appends t's bytes to the model. t.Data is copied out before Add
// returns.
func (w *Writer) Add(t *loader.Tensor) error {
	if w.err != nil {
		return w.err
	}
	if t.DType == loader.Mixed {
		return w.addStack(t)
	}
	if err := w.checkTensor(t); err != nil {
		return w.fail(err)
	}
	n := int64(len(t.Data))
	if n > w.shardBytes {
		return w.addParts(t)
	}
	if w.open && alignUp(w.off)+n > w.shardBytes {
		if err := w.finishShard(); err != nil {
			return w.fail(err)
		}
	}
	if !w.open {
		if err := w.openShard(); err != nil {
			return w.fail(err)
		}
	}
	start := alignUp(w.off)
	if err := w.write(make([]byte, start-w.off)); err != nil {
		return w.fail(err)
	}
	if err := w.write(t.Data); err != nil {
		return w.fail(err)
	}
	w.names[t.Name] = true
	w.tensors = append(w.tensors, TensorInfo{Name: t.Name, DType: t.DType.String(), Shape: append([]int{}, t.Shape...),
		Shard: len(w.shards), Offset: start, Bytes: n})
	if w.off >= w.shardBytes {
		if err := w.finishShard(); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// addParts writes a tensor larger than a shard over fresh shards, a
// shard's worth at a time.
func (w *Writer) addParts(t *loader.Tensor) error {
	if w.open {
		if err := w.finishShard(); err != nil {
			return w.fail(err)
		}
	}
	var parts []Part
	for at := int64(0); at < int64(len(t.Data)); {
		if err := w.openShard(); err != nil {
			return w.fail(err)
		}
		n := min(int64(len(t.Data))-at, w.shardBytes)
		if err := w.write(t.Data[at : at+n]); err != nil {
			return w.fail(err)
		}
		parts = append(parts, Part{Shard: len(w.shards), Offset: 0, Bytes: n})
		at += n
		if at < int64(len(t.Data)) || w.off >= w.shardBytes {
			if err := w.finishShard(); err != nil {
				return w.fail(err)
			}
		}
	}
	w.names[t.Name] = true
	w.tensors = append(w.tensors, TensorInfo{Name: t.Name, DType: t.DType.String(), Shape: append([]int{}, t.Shape...),
		Shard: parts[0].Shard, Offset: 0, Bytes: int64(len(t.Data)), Parts: parts})
	return nil
}

// addStack writes a Mixed tensor's row blocks as tensors of their own
// (model.StackPartName), then its entry naming them (TensorInfo.Stack).
func (w *Writer) addStack(t *loader.Tensor) error {
	if t.Name == "" || w.names[t.Name] || len(t.Stack) < 2 {
		return w.fail(&loader.FormatError{File: w.dir, Field: fmt.Sprintf("tensor %q", t.Name), Offset: -1,
			Err: fmt.Errorf("%w: a mixed tensor needs a new name and at least 2 row blocks", loader.ErrCorrupt)})
	}
	info := TensorInfo{Name: t.Name, DType: t.DType.String(), Shape: append([]int{}, t.Shape...)}
	for i, p := range t.Stack {
		part := *p
		part.Name = model.StackPartName(t.Name, i)
		if err := w.Add(&part); err != nil {
			return err
		}
		info.Stack = append(info.Stack, part.Name)
		info.Bytes += int64(len(p.Data))
	}
	w.names[t.Name] = true
	w.tensors = append(w.tensors, info)
	return nil
}

func (w *Writer) checkTensor(t *loader.Tensor) error {
	fe := &loader.FormatError{File: w.dir, Field: fmt.Sprintf("tensor %q", t.Name), Offset: -1}
	_, known := parseDType(t.DType.String())
	n, shapeErr := elements(t.Shape)
	switch {
	case t.Name == "":
		fe.Err = fmt.Errorf("%w: empty tensor name", loader.ErrCorrupt)
	case w.names[t.Name]:
		fe.Err = fmt.Errorf("%w: tensor added twice", loader.ErrCorrupt)
	case !known:
		fe.Err = fmt.Errorf("%w: dtype %s", loader.ErrUnsupported, t.DType)
	case shapeErr != nil:
		fe.Err = fmt.Errorf("%w: shape %v: %v", loader.ErrCorrupt, t.Shape, shapeErr)
	case lastDim(t.Shape)%t.DType.BlockElems() != 0:
		fe.Err = fmt.Errorf("%w: row of %d elements is not a whole number of %s blocks", loader.ErrCorrupt, lastDim(t.Shape), t.DType)
	case n > 0:
		fe.Err = t.CheckSize()
	}
	if fe.Err != nil {
		return fe
	}
	return nil
}

// AddFile writes an extra file into the model folder, such as the
// tokenizer.json a Tokenizer entry names. The name must be a plain file name
// that is neither manifest.json nor a shard name.
func (w *Writer) AddFile(name string, data []byte) error {
	if w.err != nil {
		return w.err
	}
	switch {
	case !safeFileName(name) || name == ManifestFile || IsHashedName(name) || strings.HasSuffix(name, ".partial"):
		return w.fail(fmt.Errorf("manifest: AddFile: %q is not an allowed file name", name))
	case w.files[name]:
		return w.fail(fmt.Errorf("manifest: AddFile: %q added twice", name))
	}
	w.files[name] = true
	if err := w.putFile(name, data); err != nil {
		return w.fail(err)
	}
	return nil
}

// putFile writes a whole file of the folder.
func (w *Writer) putFile(name string, data []byte) error {
	if w.store != nil {
		if err := w.store.Put(name, data); err != nil {
			return fmt.Errorf("manifest: storing %s: %w", name, err)
		}
		return nil
	}
	return writeFileSync(filepath.Join(w.tmp, name), data)
}

func (w *Writer) openShard() error {
	w.open = true
	if w.store != nil {
		w.mem.Reset()
		w.h, w.off = sha256.New(), 0
		return nil
	}
	w.partial = filepath.Join(w.tmp, fmt.Sprintf("shard-%05d.partial", len(w.shards)))
	f, err := os.OpenFile(w.partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	w.f, w.bw, w.h, w.off = f, bufio.NewWriterSize(f, 1<<20), sha256.New(), 0
	return nil
}

func (w *Writer) write(p []byte) error {
	w.h.Write(p)
	if w.store != nil {
		w.mem.Write(p)
		w.off += int64(len(p))
		return nil
	}
	if _, err := w.bw.Write(p); err != nil {
		return fmt.Errorf("manifest: writing %s: %w", w.partial, err)
	}
	w.off += int64(len(p))
	return nil
}

func (w *Writer) finishShard() error {
	w.open = false
	if w.store != nil {
		sum := hex.EncodeToString(w.h.Sum(nil))
		name := ShardName(len(w.shards), sum)
		if err := w.store.Put(name, w.mem.Bytes()); err != nil {
			return fmt.Errorf("manifest: storing %s: %w", name, err)
		}
		w.mem.Reset()
		w.shards = append(w.shards, Shard{File: name, Bytes: w.off, SHA256: sum})
		return nil
	}
	f := w.f
	w.f = nil
	err := w.bw.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("manifest: writing %s: %w", w.partial, err)
	}
	sum := hex.EncodeToString(w.h.Sum(nil))
	name := ShardName(len(w.shards), sum)
	if err := os.Rename(w.partial, filepath.Join(w.tmp, name)); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	w.shards = append(w.shards, Shard{File: name, Bytes: w.off, SHA256: sum})
	return nil
}

// Close finishes the last shard, fills in m's format version, shard list and
// tensor table (and Name, when empty, from the folder name), validates m,
// writes manifest.json and renames the folder into place, replacing an
// earlier model folder there.
func (w *Writer) Close(m *Manifest) error {
	if w.err != nil {
		return w.err
	}
	if m == nil {
		return w.fail(errors.New("manifest: Close with a nil manifest"))
	}
	if w.open {
		if err := w.finishShard(); err != nil {
			return w.fail(err)
		}
	}
	m.FormatVersion = FormatVersion
	for _, t := range w.tensors {
		if len(t.Parts) > 0 && m.FormatVersion < FormatVersionParts {
			m.FormatVersion = FormatVersionParts
		}
		if len(t.Stack) > 0 {
			m.FormatVersion = FormatVersionStack
		}
	}
	m.Shards = append([]Shard{}, w.shards...)
	m.Tensors = append([]TensorInfo{}, w.tensors...)
	if m.Name == "" {
		m.Name = filepath.Base(w.dir)
	}
	if err := m.validate(filepath.Join(w.dir, ManifestFile)); err != nil {
		return w.fail(err)
	}
	data, err := m.Encode()
	if err != nil {
		return w.fail(fmt.Errorf("manifest: %w", err))
	}
	if err := w.putFile(ManifestFile, data); err != nil {
		return w.fail(err)
	}
	if w.store == nil {
		if err := w.swapIn(); err != nil {
			return w.fail(err)
		}
	}
	w.err = errClosed
	return nil
}

// swapIn renames the temporary folder to dir, moving an earlier model folder
// aside first and deleting it afterwards.
func (w *Writer) swapIn() error {
	if err := checkReplaceable(w.dir); err != nil {
		return err
	}
	old := ""
	if _, err := os.Lstat(w.dir); err == nil {
		old = w.tmp + ".old"
		if err := os.Rename(w.dir, old); err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
	}
	if err := os.Rename(w.tmp, w.dir); err != nil {
		if old != "" {
			os.Rename(old, w.dir)
		}
		return fmt.Errorf("manifest: %w", err)
	}
	if d, err := os.Open(filepath.Dir(w.dir)); err == nil {
		d.Sync()
		d.Close()
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("manifest: model written to %s, but removing the previous one failed: %w", w.dir, err)
		}
	}
	return nil
}

// Abort discards everything written so far. It does nothing after a
// successful Close.
func (w *Writer) Abort() error {
	if w.err == errClosed {
		return nil
	}
	w.cleanup()
	w.err = ErrAborted
	if w.tmp == "" {
		return nil
	}
	if err := os.RemoveAll(w.tmp); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return nil
}

// fail records err as the Writer's final state and removes the temporary
// folder.
func (w *Writer) fail(err error) error {
	w.cleanup()
	if w.tmp != "" {
		os.RemoveAll(w.tmp)
	}
	w.err = err
	return err
}

func (w *Writer) cleanup() {
	w.open = false
	if w.mem != nil {
		w.mem.Reset()
	}
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("manifest: writing %s: %w", path, err)
	}
	return nil
}

func alignUp(n int64) int64 { return (n + Align - 1) &^ (Align - 1) }
