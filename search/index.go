package search

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"wasmllm/loader"
)

// Index file names, in an index folder.
const (
	ManifestFile = "manifest.json"
	PassagesFile = "passages.json"
	VectorsFile  = "vectors.f16"
	// Format is the manifest's format.
	Format = "wasmllm-search/1"
	// SnippetChars bounds a stored snippet.
	SnippetChars = 240
)

// Manifest is an index's manifest.json.
type Manifest struct {
	Format      string              `json:"format"`
	Model       string              `json:"model"`
	Dimensions  int                 `json:"dimensions"`
	Count       int                 `json:"count"`
	Vectors     string              `json:"vectors"` // "f16": Count×Dimensions little-endian f16, each L2-normalised
	QueryPrefix string              `json:"query_prefix,omitempty"`
	Files       map[string]FileInfo `json:"files"`
}

// FileInfo is one file of an index.
type FileInfo struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Entry is a passage as the index stores it: where it is and a snippet.
type Entry struct {
	Page    string `json:"page"`
	Heading string `json:"heading,omitempty"`
	Anchor  string `json:"anchor,omitempty"`
	Snippet string `json:"snippet"`
}

// Input is the text a passage is embedded as: its heading, then its text.
func (p Passage) Input() string {
	if p.Heading == "" {
		return p.Text
	}
	return p.Heading + "\n" + p.Text
}

// snippet cuts s to SnippetChars bytes at a character boundary.
func snippet(s string) string {
	if len(s) <= SnippetChars {
		return s
	}
	n := SnippetChars
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Write writes an index of passages and their normalised vectors into dir.
func Write(dir, model, queryPrefix string, ps []Passage, vecs [][]float32) (*Manifest, error) {
	if len(ps) != len(vecs) || len(ps) == 0 {
		return nil, fmt.Errorf("search: %d passages, %d vectors", len(ps), len(vecs))
	}
	D := len(vecs[0])
	entries := make([]Entry, len(ps))
	raw := make([]byte, 0, 2*D*len(vecs))
	for i, p := range ps {
		entries[i] = Entry{Page: p.Page, Heading: p.Heading, Anchor: p.Anchor, Snippet: snippet(p.Text)}
		if len(vecs[i]) != D {
			return nil, fmt.Errorf("search: vector %d has %d values, want %d", i, len(vecs[i]), D)
		}
		for _, v := range vecs[i] {
			raw = binary.LittleEndian.AppendUint16(raw, loader.F32ToF16(v))
		}
	}
	pj, err := json.Marshal(struct {
		Passages []Entry `json:"passages"`
	}{entries})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	m := &Manifest{Format: Format, Model: model, Dimensions: D, Count: len(ps), Vectors: "f16", QueryPrefix: queryPrefix, Files: map[string]FileInfo{}}
	for name, data := range map[string][]byte{PassagesFile: pj, VectorsFile: raw} {
		sum := sha256.Sum256(data)
		m.Files[name] = FileInfo{Bytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	mj, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(dir, ManifestFile), append(mj, '\n'), 0o644)
}

// Index is an index read back: its manifest, entries and vectors (f16
// widened to f32).
type Index struct {
	Manifest *Manifest
	Entries  []Entry
	Vectors  []float32 // Count×Dimensions
}

// ErrIntegrity reports an index file whose size or sha256 is not the
// manifest's.
var ErrIntegrity = errors.New("search: index file does not match its manifest")

// Read reads and verifies the index in dir.
func Read(dir string) (*Index, error) {
	mj, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(mj, &m); err != nil {
		return nil, fmt.Errorf("search: %s: %w", ManifestFile, err)
	}
	if m.Format != Format || m.Vectors != "f16" || m.Dimensions <= 0 || m.Count <= 0 {
		return nil, fmt.Errorf("search: %s: format %q, vectors %q, %d×%d", ManifestFile, m.Format, m.Vectors, m.Count, m.Dimensions)
	}
	read := func(name string) ([]byte, error) {
		fi, ok := m.Files[name]
		if !ok {
			return nil, fmt.Errorf("search: %s lists no %s", ManifestFile, name)
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != fi.Bytes || hex.EncodeToString(sum[:]) != fi.SHA256 {
			return nil, fmt.Errorf("%w: %s", ErrIntegrity, name)
		}
		return data, nil
	}
	pj, err := read(PassagesFile)
	if err != nil {
		return nil, err
	}
	var p struct {
		Passages []Entry `json:"passages"`
	}
	if err := json.Unmarshal(pj, &p); err != nil {
		return nil, fmt.Errorf("search: %s: %w", PassagesFile, err)
	}
	raw, err := read(VectorsFile)
	if err != nil {
		return nil, err
	}
	if len(p.Passages) != m.Count || len(raw) != 2*m.Count*m.Dimensions {
		return nil, fmt.Errorf("%w: %d passages and %d vector bytes for %d×%d", ErrIntegrity, len(p.Passages), len(raw), m.Count, m.Dimensions)
	}
	v := make([]float32, m.Count*m.Dimensions)
	for i := range v {
		v[i] = loader.F16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return &Index{Manifest: &m, Entries: p.Passages, Vectors: v}, nil
}

// Hit is one ranked passage.
type Hit struct {
	Index int     `json:"index"`
	Score float64 `json:"score"`
}

// Rank scores every passage by cosine with the normalised query (the dot
// product with the stored normalised vectors, each product and the sum in
// float64, in index order: what JavaScript computes over Float32Arrays)
// and returns the best k, highest first, ties to the lower index.
func (x *Index) Rank(query []float32, k int) []Hit {
	D := x.Manifest.Dimensions
	hits := make([]Hit, x.Manifest.Count)
	for i := range hits {
		var s float64
		row := x.Vectors[i*D : (i+1)*D]
		for d, q := range query[:D] {
			s += float64(q) * float64(row[d])
		}
		hits[i] = Hit{i, s}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].Score > hits[b].Score })
	return hits[:min(k, len(hits))]
}

// Collect reads every .md, .markdown, .html and .htm page under root (in
// path order, hidden names skipped) and splits it into passages.
func Collect(root string) ([]Passage, error) {
	var out []Passage
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && path != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		page := filepath.ToSlash(rel)
		switch strings.ToLower(filepath.Ext(path)) {
		case ".md", ".markdown":
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, SplitMarkdown(page, string(b))...)
		case ".html", ".htm":
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, SplitHTML(page, string(b))...)
		}
		return nil
	})
	return out, err
}
