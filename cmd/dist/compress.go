package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// compressible reports whether a file gets precompressed siblings: the
// types the Go server serves precompressed (server_files.go). Shards
// (.bin) never do: quantised weights do not compress, and hosts must serve
// them with exact byte ranges.
func compressible(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".html", ".htm", ".js", ".mjs", ".css", ".json", ".map", ".webmanifest", ".wasm", ".wgsl", ".svg", ".txt", ".md":
		return true
	}
	return false
}

// compressTree writes NAME.gz (and NAME.br with a brotli binary) beside
// every compressible file under dir, when it is smaller than the file, with
// the file's modification time (the Go server skips siblings older than
// their file). It counts every file in r.
func compressTree(dir, brotli string, r *Report) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && d.Name() != markerFile {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		r.Files++
		r.Bytes += fi.Size()
		if !compressible(p) {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		gz, err := gzipBytes(data)
		if err != nil {
			return fmt.Errorf("gzip %s: %w", p, err)
		}
		var br []byte
		if brotli != "" {
			if br, err = exec.Command(brotli, "-q", "11", "-c", p).Output(); err != nil {
				return fmt.Errorf("%s %s: %w", brotli, p, err)
			}
		}
		for _, s := range []struct {
			ext  string
			data []byte
		}{{".gz", gz}, {".br", br}} {
			if s.data == nil || len(s.data) >= len(data) {
				continue
			}
			if err := os.WriteFile(p+s.ext, s.data, 0o644); err != nil {
				return err
			}
			if err := os.Chtimes(p+s.ext, fi.ModTime(), fi.ModTime()); err != nil {
				return err
			}
			r.Files++
			r.Siblings++
			r.Bytes += int64(len(s.data))
		}
		if filepath.Base(p) == "wasmllm.wasm" && filepath.Dir(p) == dir {
			r.WasmRaw, r.WasmGzip = int64(len(data)), int64(len(gz))
			if br != nil {
				r.WasmBrotli = int64(len(br))
			}
		}
	}
	return nil
}

func gzipBytes(data []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
