package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"wasmllm/manifest"
)

// modelEntry is one model in the /models/ listing.
type modelEntry struct {
	Name          string `json:"name"`     // folder name
	URL           string `json:"url"`      // "/models/NAME/"
	Manifest      string `json:"manifest"` // "/models/NAME/manifest.json"
	FormatVersion int    `json:"format_version,omitempty"`
	Arch          string `json:"arch,omitempty"`
	Quant         string `json:"quant,omitempty"`
	Bytes         int64  `json:"bytes,omitempty"` // total shard size
	Shards        int    `json:"shards,omitempty"`
	Tensors       int    `json:"tensors,omitempty"`
	Error         string `json:"error,omitempty"` // why the manifest is unusable
}

// modelListing is the /models/ response body.
type modelListing struct {
	Models []modelEntry `json:"models"`
}

// serveListing answers /models/ with every subfolder of -models that holds a
// manifest.json, in name order. Hidden folders (such as a converter's
// temporary output) are skipped, and so is anything a symlink would take
// outside the models folder.
func (h *handler) serveListing(w http.ResponseWriter, r *http.Request) {
	list := modelListing{Models: []modelEntry{}}
	if root, err := os.OpenRoot(h.models); err == nil {
		list.Models = h.listModels(root)
		root.Close()
	} else if !errors.Is(err, fs.ErrNotExist) {
		h.log.Printf("models: %v", err)
	}
	body, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		http.Error(w, "500 "+err.Error(), http.StatusInternalServerError)
		return
	}
	body = append(body, '\n')
	sum := sha256.Sum256(body)
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", fmt.Sprintf(`"%x"`, sum[:12]))
	http.ServeContent(w, r, "models.json", time.Time{}, bytes.NewReader(body))
}

func (h *handler) listModels(root *os.Root) []modelEntry {
	out := []modelEntry{}
	dir, err := root.Open(".")
	if err != nil {
		h.log.Printf("models: %v", err)
		return out
	}
	entries, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		h.log.Printf("models: %v", err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if fi, err := root.Stat(name); err != nil || !fi.IsDir() {
			continue
		}
		if _, err := root.Stat(name + "/" + manifest.ManifestFile); err != nil {
			continue
		}
		u := "/models/" + url.PathEscape(name) + "/"
		ent := modelEntry{Name: name, URL: u, Manifest: u + manifest.ManifestFile}
		sub, err := fs.Sub(root.FS(), name)
		var m *manifest.Manifest
		if err == nil {
			m, err = manifest.ReadFS(sub)
		}
		if err != nil {
			ent.Error = err.Error()
		} else {
			ent.FormatVersion, ent.Arch, ent.Quant = m.FormatVersion, m.Arch, m.Quant
			ent.Bytes, ent.Shards, ent.Tensors = m.TotalBytes(), len(m.Shards), len(m.Tensors)
		}
		out = append(out, ent)
	}
	return out
}
