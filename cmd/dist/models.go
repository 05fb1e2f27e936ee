package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"wasmllm/manifest"
	"wasmllm/model"
)

// ModelEntry is one model of models/index.json. It has the fields of the Go
// server's /models/ listing (server_models.go), with URLs relative to the
// listing, so the page reads either.
type ModelEntry struct {
	Name          string `json:"name"`
	URL           string `json:"url"`
	Manifest      string `json:"manifest"`
	FormatVersion int    `json:"format_version,omitempty"`
	Arch          string `json:"arch,omitempty"`
	Quant         string `json:"quant,omitempty"`
	Bytes         int64  `json:"bytes,omitempty"`
	Shards        int    `json:"shards,omitempty"`
	Tensors       int    `json:"tensors,omitempty"`
}

// IndexFile is the listing written into the models folder.
const IndexFile = "index.json"

// ShardError reports a shard that does not match its manifest entry.
type ShardError struct {
	Model, File string
	Want, Got   string // sha256 (or size) expected and found
	Err         error  // manifest.ErrChecksum for a content mismatch
}

func (e *ShardError) Error() string {
	return fmt.Sprintf("model %s: shard %s does not match the manifest, which says %s; the file has %s", e.Model, e.File, e.Want, e.Got)
}

func (e *ShardError) Unwrap() error { return e.Err }

// copyModels copies every model folder of src (a subfolder holding
// manifest.json; hidden ones are skipped) into dst, checking each shard's
// size and sha256 while it is copied and that the tokenizer files exist,
// and writes dst/index.json.
func copyModels(src, dst string) ([]ModelEntry, error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("-models: %w", err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	list := []ModelEntry{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !e.IsDir() {
			continue
		}
		dir := filepath.Join(src, name)
		if _, err := os.Stat(filepath.Join(dir, manifest.ManifestFile)); err != nil {
			continue
		}
		ent, err := copyModel(dir, filepath.Join(dst, name), name)
		if err != nil {
			return nil, err
		}
		list = append(list, ent)
	}
	body, err := json.MarshalIndent(struct {
		Models []ModelEntry `json:"models"`
	}{list}, "", "  ")
	if err != nil {
		return nil, err
	}
	return list, os.WriteFile(filepath.Join(dst, IndexFile), append(body, '\n'), 0o644)
}

func copyModel(src, dst, name string) (ModelEntry, error) {
	m, err := manifest.Read(src)
	if err != nil {
		return ModelEntry{}, fmt.Errorf("model %s: %w", name, err)
	}
	spec, err := model.ParseTokenizerSpec(filepath.Join(src, manifest.ManifestFile), m.Tokenizer)
	if err != nil {
		return ModelEntry{}, fmt.Errorf("model %s: %w", name, err)
	}
	if spec != nil {
		for _, f := range append([]string{spec.File}, spec.Files...) {
			if f == "" {
				continue
			}
			if fi, err := os.Stat(filepath.Join(src, f)); err != nil || !fi.Mode().IsRegular() {
				return ModelEntry{}, fmt.Errorf("model %s: the manifest names tokenizer file %s, which is missing", name, f)
			}
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return ModelEntry{}, err
	}
	shards := map[string]manifest.Shard{}
	for _, s := range m.Shards {
		shards[s.File] = s
	}
	files, err := os.ReadDir(src)
	if err != nil {
		return ModelEntry{}, err
	}
	for _, f := range files {
		if strings.HasPrefix(f.Name(), ".") || !f.Type().IsRegular() {
			continue
		}
		from, to := filepath.Join(src, f.Name()), filepath.Join(dst, f.Name())
		if s, ok := shards[f.Name()]; ok {
			if err := copyShard(from, to, name, s); err != nil {
				return ModelEntry{}, err
			}
			delete(shards, f.Name())
			continue
		}
		if err := copyFile(from, to); err != nil {
			return ModelEntry{}, err
		}
	}
	for _, s := range m.Shards {
		if _, left := shards[s.File]; left {
			return ModelEntry{}, fmt.Errorf("model %s: shard %s is missing", name, s.File)
		}
	}
	u := url.PathEscape(name) + "/"
	return ModelEntry{Name: name, URL: u, Manifest: u + manifest.ManifestFile, FormatVersion: m.FormatVersion,
		Arch: m.Arch, Quant: m.Quant, Bytes: m.TotalBytes(), Shards: len(m.Shards), Tensors: len(m.Tensors)}, nil
}

// copyShard copies a shard, hashing it on the way.
func copyShard(src, dst, model string, s manifest.Shard) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	h := sha256.New()
	n := int64(0)
	counted := io.TeeReader(io.LimitReader(in, s.Bytes+1), writerFunc(func(p []byte) (int, error) {
		n += int64(len(p))
		return h.Write(p)
	}))
	if err := writeFile(dst, counted); err != nil {
		return err
	}
	if n != s.Bytes {
		got := fmt.Sprintf("%d bytes", n)
		if n > s.Bytes {
			got = "more bytes"
		}
		return &ShardError{Model: model, File: s.File, Want: fmt.Sprintf("%d bytes", s.Bytes), Got: got, Err: manifest.ErrChecksum}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 {
		return &ShardError{Model: model, File: s.File, Want: "sha256 " + s.SHA256, Got: "sha256 " + got, Err: manifest.ErrChecksum}
	}
	return nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
