package server

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
	"slices"
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

// maxListedManifest caps the manifest bytes the listing reads for one model:
// a larger manifest (manifest.MaxManifestBytes allows 64 MiB) is listed by
// name only, without being read, and left for the loader to validate.
const maxListedManifest = 16 << 20

// serveListing answers /models/ with every subfolder of -models that holds a
// manifest.json, in name order. Hidden folders (such as a converter's
// temporary output) are skipped, and so is anything a symlink would take
// outside the models folder or to a hidden name. Each manifest is parsed
// once per version (see listingCache), and one listing is built at a time.
func (h *handler) serveListing(w http.ResponseWriter, r *http.Request) {
	select {
	case h.listing.busy <- struct{}{}:
		defer func() { <-h.listing.busy }()
	case <-r.Context().Done():
		return
	}
	list := modelListing{Models: []modelEntry{}}
	if root, err := os.OpenRoot(h.models); err == nil {
		list.Models, err = h.listModels(root)
		root.Close()
		if err != nil {
			h.log.Printf("models: %s", sanitizeMsg(err.Error(), 300))
			unavailable(w, err)
			return
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		h.log.Printf("models: %s", sanitizeMsg(err.Error(), 300))
		if !notServable(err) {
			unavailable(w, err)
			return
		}
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
	serveContent(w, r, "models.json", time.Time{}, int64(len(body)), bytes.NewReader(body))
}

// listModels lists the model folders of root, sorted by name. An error is
// the server's own failure (such as running out of file descriptors), not a
// model's: a broken model is an entry with Error set.
func (h *handler) listModels(root *os.Root) ([]modelEntry, error) {
	out := []modelEntry{}
	dir, err := root.Open(".")
	if err != nil {
		return out, err
	}
	entries, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return out, err
	}
	seen := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		p, err := resolve(root, name+"/"+manifest.ManifestFile)
		if err == nil {
			var fi fs.FileInfo
			if fi, err = root.Stat(p); err == nil && !fi.Mode().IsRegular() {
				continue
			}
		}
		if err != nil {
			if notServable(err) {
				continue
			}
			return out, err
		}
		ent, err := h.listing.entry(root, p, h.log)
		if err != nil {
			if notServable(err) { // gone since
				continue
			}
			return out, err
		}
		seen[p] = true
		u := "/models/" + url.PathEscape(name) + "/"
		ent.Name, ent.URL, ent.Manifest = name, u, u+manifest.ManifestFile
		out = append(out, ent)
	}
	h.listing.forget(seen)
	slices.SortFunc(out, func(a, b modelEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
