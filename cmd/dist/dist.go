package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Options say what Build reads and where it writes.
type Options struct {
	Out      string // the output folder
	Web      string // pages and scripts (web/)
	Wasm     string // the engine, written as wasmllm.wasm
	WasmExec string // the toolchain's wasm_exec.js
	Models   string // converted model folders; "" for none
	Brotli   string // a brotli binary for .br siblings; "" for none
	// Docs are Markdown files written under docs/ with a <wasmllm-search>
	// page over them (writeDocs), their index built with DocsModel, a
	// text-embedding GGUF; none: no docs example.
	Docs      []string
	DocsModel string
}

// Report describes a written dist folder.
type Report struct {
	Out        string
	Files      int   // files written, siblings included
	Bytes      int64 // their total size
	Siblings   int   // .gz and .br files among them
	Models     []ModelEntry
	Docs       *DocsReport // nil without -docs
	WasmRaw    int64
	WasmGzip   int64
	WasmBrotli int64 // 0 without a brotli binary
}

func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dist: wrote %s: %d files, %s (%d precompressed siblings)\n", r.Out, r.Files, size(r.Bytes), r.Siblings)
	for _, m := range r.Models {
		fmt.Fprintf(&b, "dist: model %s (%s, %s, %d shards)\n", m.Name, m.Arch, size(m.Bytes), m.Shards)
	}
	if d := r.Docs; d != nil {
		fmt.Fprintf(&b, "dist: docs search %s/: %d passages of %d pages, embedded with %s\n", docsDir, d.Passages, d.Pages, d.Model)
	}
	fmt.Fprintf(&b, "dist: wasmllm.wasm %s raw, %s gzip", size(r.WasmRaw), size(r.WasmGzip))
	if r.WasmBrotli > 0 {
		fmt.Fprintf(&b, ", %s brotli", size(r.WasmBrotli))
	} else {
		b.WriteString(" (no brotli binary on PATH: no .br files)")
	}
	b.WriteString("\n")
	return b.String()
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// markerFile marks a folder written by dist, which a later run may replace.
const markerFile = ".wasmllm-dist"

// OutputError reports an output folder that dist must not write: one that
// holds other files, or that lies inside an input.
type OutputError struct {
	Path string
	Why  string
}

func (e *OutputError) Error() string { return fmt.Sprintf("output folder %s: %s", e.Path, e.Why) }

// Build writes the dist folder: it is assembled next to o.Out and renamed
// into place, so a failed run leaves any earlier dist folder untouched.
func Build(o Options) (*Report, error) {
	if o.Out == "" {
		return nil, &OutputError{Path: o.Out, Why: "no folder given"}
	}
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, err
	}
	if err := checkOutput(out, o); err != nil {
		return nil, err
	}
	for _, in := range []struct{ what, path string }{{"-wasm", o.Wasm}, {"-wasm-exec", o.WasmExec}} {
		if fi, err := os.Stat(in.path); err != nil {
			return nil, fmt.Errorf("%s: %w", in.what, err)
		} else if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s %s: not a file", in.what, in.path)
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	r := &Report{Out: o.Out}
	if err := copyTree(o.Web, tmp); err != nil {
		return nil, fmt.Errorf("-web: %w", err)
	}
	if err := copyFile(o.Wasm, filepath.Join(tmp, "wasmllm.wasm")); err != nil {
		return nil, err
	}
	if err := copyFile(o.WasmExec, filepath.Join(tmp, "wasm_exec.js")); err != nil {
		return nil, err
	}
	if o.Models != "" {
		if r.Models, err = copyModels(o.Models, filepath.Join(tmp, "models")); err != nil {
			return nil, err
		}
	}
	if len(o.Docs) > 0 {
		if r.Docs, err = writeDocs(tmp, o.Docs, o.DocsModel); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, markerFile), []byte("written by wasmllm's cmd/dist; the next run replaces this folder\n"), 0o644); err != nil {
		return nil, err
	}
	if err := compressTree(tmp, o.Brotli, r); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, err
	}
	return r, nil
}

// checkOutput refuses an output folder that holds anything dist did not
// write, or that is one of the inputs or lies inside one.
func checkOutput(out string, o Options) error {
	for _, in := range []string{o.Web, o.Models} {
		if in == "" {
			continue
		}
		abs, err := filepath.Abs(in)
		if err != nil {
			return err
		}
		if rel, err := filepath.Rel(abs, out); err == nil && !strings.HasPrefix(rel, "..") {
			return &OutputError{Path: out, Why: "it is inside the input folder " + in}
		}
		if rel, err := filepath.Rel(out, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return &OutputError{Path: out, Why: "it holds the input folder " + in}
		}
	}
	entries, err := os.ReadDir(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &OutputError{Path: out, Why: err.Error()}
	case len(entries) == 0:
		return nil
	}
	if _, err := os.Stat(filepath.Join(out, markerFile)); err != nil {
		return &OutputError{Path: out, Why: "it is not empty and was not written by dist (no " + markerFile + "); remove it or choose another"}
	}
	return nil
}

// copyTree copies the regular files under src into dst, skipping hidden
// names.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, target)
		}
		return nil // symlinks and devices are not part of a site
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeFile(dst, in)
}

func writeFile(dst string, r io.Reader) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	return out.Close()
}

// WasmExecFromGOROOT returns the wasm_exec.js of the go command's toolchain.
func WasmExecFromGOROOT() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w (pass -wasm-exec)", err)
	}
	root := strings.TrimSpace(string(out))
	for _, p := range []string{"lib/wasm/wasm_exec.js", "misc/wasm/wasm_exec.js"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			return filepath.Join(root, p), nil
		}
	}
	return "", fmt.Errorf("no wasm_exec.js under %s (pass -wasm-exec)", root)
}
