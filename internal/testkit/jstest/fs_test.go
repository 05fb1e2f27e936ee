//go:build js

package jstest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"wasmllm/loader"
)

// These tests check the file system that cmd/wasmexec gives the program
// (its fs.js) against the same files fetched whole by ReadFile, which does
// not go through it. The test's working directory is internal/testkit/jstest.

const repo = "../../.."

func TestGetwd(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(wd) || !strings.HasSuffix(wd, "/internal/testkit/jstest") {
		t.Fatalf("Getwd = %q, want the host path of internal/testkit/jstest", wd)
	}
	abs, err := filepath.Abs("x")
	if err != nil || abs != wd+"/x" {
		t.Fatalf("Abs(x) = %q, %v", abs, err)
	}
}

func TestOSReadFileMatchesFetch(t *testing.T) {
	for _, rel := range []string{"go.mod", "testdata/models/stories260K.gguf", "testdata/models/tiny-qwen3moe-dq8.gguf"} {
		want, err := ReadFile(rel)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(repo + "/" + rel)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: os.ReadFile gave %d bytes (sha256 %x), fetch %d (%x)", rel, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
		}
	}
	// The digest in testdata/README.md.
	got, err := os.ReadFile(repo + "/testdata/models/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256(got)); sum != "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d" {
		t.Fatalf("stories260K.gguf sha256 %s", sum)
	}
}

func TestAbsolutePath(t *testing.T) {
	wd, _ := os.Getwd()
	a, err := os.ReadFile(filepath.Join(wd, "../../../go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(repo + "/go.mod")
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("absolute and relative reads differ: %v", err)
	}
}

// TestFileReadSeek reads a 6.8 MB file in odd pieces with Read, ReadAt and
// Seek, across the 1 MiB read-ahead chunks, and compares with the whole file.
func TestFileReadSeek(t *testing.T) {
	const rel = "testdata/models/tiny-qwen3moe-dq8.gguf"
	want, err := ReadFile(rel)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(repo + "/" + rel)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() != int64(len(want)) || !st.Mode().IsRegular() || st.Name() != filepath.Base(rel) {
		t.Fatalf("Stat = %v %v, want a regular file of %d bytes", st, err, len(want))
	}

	// Sequential reads of sizes that do not divide the chunk.
	var got []byte
	buf := make([]byte, 100_003)
	for {
		n, err := f.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("sequential Read: %d bytes differ from the file's %d", len(got), len(want))
	}

	// ReadAt: inside a chunk, straddling one, larger than one, at and past the end.
	for _, c := range []struct{ off, n int }{
		{0, 8}, {1<<20 - 3, 7}, {5, 3 << 20}, {len(want) - 10, 10}, {len(want) - 4, 16}, {len(want), 4}, {len(want) + 100, 4},
	} {
		p := make([]byte, c.n)
		n, err := f.ReadAt(p, int64(c.off))
		wantN := max(0, min(c.n, len(want)-c.off))
		if n != wantN || !bytes.Equal(p[:n], want[min(c.off, len(want)):min(c.off, len(want))+wantN]) {
			t.Errorf("ReadAt(%d bytes at %d) = %d, %v; want %d bytes of the file", c.n, c.off, n, err, wantN)
		}
		if n < c.n && err != io.EOF {
			t.Errorf("short ReadAt(%d at %d): err %v, want io.EOF", c.n, c.off, err)
		}
	}

	// Seek then Read; SeekEnd uses the size.
	for _, c := range []struct {
		off    int64
		whence int
		pos    int64
	}{{1234567, io.SeekStart, 1234567}, {-100, io.SeekEnd, int64(len(want)) - 100}, {10, io.SeekCurrent, int64(len(want)) - 40}} {
		pos, err := f.Seek(c.off, c.whence)
		if err != nil || pos != c.pos {
			t.Fatalf("Seek(%d, %d) = %d, %v; want %d", c.off, c.whence, pos, err, c.pos)
		}
		p := make([]byte, 50)
		n, err := io.ReadFull(f, p)
		wantN := min(50, len(want)-int(pos))
		if n != wantN || !bytes.Equal(p[:n], want[pos:pos+int64(n)]) {
			t.Fatalf("Read after Seek to %d: %d bytes, %v", pos, n, err)
		}
	}
}

// TestReadGGUF parses every test model whole (os.ReadFile) and by ranges
// (OpenGGUF, ReadTensor), and checks that both see the same tensors.
func TestReadGGUF(t *testing.T) {
	files, err := filepath.Glob(repo + "/testdata/models/*.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("Glob found %d GGUF files: %q", len(files), files)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			whole, err := loader.ReadGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := loader.OpenGGUF(path)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if len(g.Tensors) == 0 || len(g.Tensors) != len(whole.Tensors) {
				t.Fatalf("%d tensors by ranges, %d whole", len(g.Tensors), len(whole.Tensors))
			}
			arch, _ := g.String("general.architecture")
			if want, _ := whole.String("general.architecture"); arch == "" || arch != want {
				t.Fatalf("architecture %q, whole file says %q", arch, want)
			}
			for i := range g.Tensors {
				a, err := g.ReadTensor(i)
				if err != nil {
					t.Fatal(err)
				}
				if b := whole.TensorAt(i); a.Name != b.Name || !bytes.Equal(a.Data, b.Data) {
					t.Fatalf("tensor %d (%s): data by range differs from the whole file's", i, a.Name)
				}
			}
		})
	}
}

// TestOpenSafetensorsSharded opens the two-shard folder and checks every
// tensor against the bytes fetched whole, and one against the F32 GGUF.
func TestOpenSafetensorsSharded(t *testing.T) {
	const dir = "testdata/hf/tiny-llama3"
	s, err := loader.OpenSafetensors(repo + "/" + dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	idx, err := ReadFile(dir + "/model.safetensors.index.json")
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(idx, &index); err != nil {
		t.Fatal(err)
	}
	if len(s.Tensors) != len(index.WeightMap) {
		t.Fatalf("%d tensors, the index maps %d", len(s.Tensors), len(index.WeightMap))
	}
	shards := map[string][]byte{}
	for _, ti := range s.Tensors {
		shard := index.WeightMap[ti.Name]
		if shard == "" || filepath.Base(ti.File) != shard {
			t.Fatalf("%s in %s, the index says %q", ti.Name, ti.File, shard)
		}
		if shards[shard] == nil {
			if shards[shard], err = ReadFile(dir + "/" + shard); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Data, shards[shard][ti.Offset:ti.Offset+ti.Size]) {
			t.Fatalf("%s: data differs from bytes %d..%d of %s", ti.Name, ti.Offset, ti.Offset+ti.Size, shard)
		}
	}
	if len(shards) != 2 {
		t.Fatalf("tensors came from %d shards, want 2", len(shards))
	}
	g, err := loader.ReadGGUF(repo + "/testdata/models/tiny-llama3-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	want, err := g.Tensor("output_norm.weight")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Tensor("model.norm.weight")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data, want.Data) {
		t.Fatal("model.norm.weight differs from the GGUF's output_norm.weight")
	}
}

func TestReadDir(t *testing.T) {
	ents, err := os.ReadDir(repo + "/testdata")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		dirs[e.Name()] = e.IsDir()
	}
	if !slices.IsSorted(names) {
		t.Errorf("ReadDir not sorted: %q", names)
	}
	for _, d := range []string{"golden", "hf", "models"} {
		if !dirs[d] {
			t.Errorf("testdata/%s: listed %v, is dir %v", d, slices.Contains(names, d), dirs[d])
		}
	}
	if dirs["README.md"] || !slices.Contains(names, "README.md") {
		t.Errorf("testdata/README.md missing or a directory: %q", names)
	}

	ents, err = os.ReadDir(repo + "/testdata/hf/tiny-llama3")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
		if !e.Type().IsRegular() {
			t.Errorf("%s: type %v", e.Name(), e.Type())
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		data, err := ReadFile("testdata/hf/tiny-llama3/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() != int64(len(data)) {
			t.Errorf("%s: Info().Size() = %d, file has %d bytes", e.Name(), info.Size(), len(data))
		}
	}
	want := []string{"config.json", "model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors.packed",
		"model-00002-of-00002.safetensors", "model-00002-of-00002.safetensors.packed",
		"model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json"}
	if !slices.Equal(got, want) {
		t.Errorf("ReadDir(tiny-llama3) = %q, want %q", got, want)
	}

	// The repository root itself, named by its absolute path.
	root, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	ents, err = os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return e.Name() == "go.mod" && e.Type().IsRegular() }) {
		t.Errorf("ReadDir(%s) has no go.mod", root)
	}
}

func TestStat(t *testing.T) {
	st, err := os.Stat(repo + "/testdata/models")
	if err != nil || !st.IsDir() || st.Name() != "models" {
		t.Fatalf("Stat(testdata/models) = %v, %v", st, err)
	}
	a, err := os.Stat(repo + "/testdata/models/tok512.bin")
	if err != nil || a.Size() != 6227 || !a.Mode().IsRegular() || a.ModTime().IsZero() {
		t.Fatalf("Stat(tok512.bin) = %+v, %v", a, err)
	}
	b, err := os.Stat("../jstest/../../../testdata/models/./tok512.bin")
	if err != nil || !os.SameFile(a, b) {
		t.Fatalf("the same file by another path: SameFile %v, %v", os.SameFile(a, b), err)
	}
	c, err := os.Lstat(repo + "/testdata/models/stories260K.bin")
	if err != nil || os.SameFile(a, c) {
		t.Fatalf("two files: SameFile %v, %v", os.SameFile(a, c), err)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		op   func() error
		want error
	}{
		{"ReadFile missing", func() error { _, err := os.ReadFile("no-such-file"); return err }, fs.ErrNotExist},
		{"Open missing", func() error { _, err := os.Open(repo + "/testdata/models/none.gguf"); return err }, fs.ErrNotExist},
		{"Stat missing", func() error { _, err := os.Stat(repo + "/nope/x"); return err }, fs.ErrNotExist},
		{"ReadDir missing", func() error { _, err := os.ReadDir(repo + "/nope"); return err }, fs.ErrNotExist},
		{"ReadGGUF missing", func() error { _, err := loader.ReadGGUF("x.gguf"); return err }, fs.ErrNotExist},
		{"OpenSafetensors missing", func() error { _, err := loader.OpenSafetensors(repo + "/testdata/hf/none"); return err }, fs.ErrNotExist},
		{"through a file", func() error { _, err := os.Stat(repo + "/go.mod/x"); return err }, syscall.ENOTDIR},
		{"ReadDir of a file", func() error { _, err := os.ReadDir(repo + "/go.mod"); return err }, nil},
		{"outside the repository", func() error { _, err := os.ReadFile("/etc/hostname"); return err }, fs.ErrPermission},
		{"above the repository", func() error { _, err := os.Stat(repo + "/.."); return err }, fs.ErrPermission},
		{"write", func() error { return os.WriteFile(repo+"/testdata/x", []byte("x"), 0o644) }, syscall.EROFS},
		{"create", func() error { _, err := os.Create("new.txt"); return err }, syscall.EROFS},
		{"mkdir", func() error { return os.Mkdir("d", 0o755) }, syscall.EROFS},
		{"remove", func() error { return os.Remove("fs_test.go") }, syscall.EROFS},
		{"Read of a directory", func() error {
			f, err := os.Open(repo + "/testdata")
			if err != nil {
				return nil
			}
			defer f.Close()
			_, err = f.Read(make([]byte, 4))
			return err
		}, syscall.EISDIR},
	} {
		err := c.op()
		if err == nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestChdir(t *testing.T) {
	wd, _ := os.Getwd()
	t.Chdir(repo + "/testdata/models")
	got, err := os.Getwd()
	if err != nil || got != filepath.Join(wd, "../../../testdata/models") {
		t.Fatalf("Getwd after Chdir = %q, %v", got, err)
	}
	if _, err := os.Stat("tok512.bin"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Chdir(nope) = %v", err)
	}
	if err := os.Chdir("tok512.bin"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Chdir(a file) = %v", err)
	}
	if err := os.Chdir("/"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Chdir(/) = %v", err)
	}
}
