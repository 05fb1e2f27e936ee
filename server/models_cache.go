package server

import (
	"io"
	"log"
	"os"
	"sync/atomic"
	"time"

	"wasmllm/manifest"
)

// listingCache keeps each manifest's part of its listing entry, keyed by the
// manifest's path in the models folder and kept while the file's size and
// modification time stay the same, so that a listing parses only manifests
// that are new or changed. Its fields are guarded by busy, which also makes
// listings be built one at a time: that bounds the memory and CPU that
// concurrent listings can take to one manifest being parsed.
type listingCache struct {
	max    int64         // manifest bytes read at most
	busy   chan struct{} // held while a listing is built
	byPath map[string]cachedEntry
	parses atomic.Int64 // manifests parsed, for tests
}

// cachedEntry is a manifest's details (modelEntry without Name, URL and
// Manifest) as of the version with this size and modification time.
type cachedEntry struct {
	size  int64
	mtime time.Time
	ent   modelEntry
}

func newListingCache(max int64) *listingCache {
	return &listingCache{max: max, busy: make(chan struct{}, 1), byPath: map[string]cachedEntry{}}
}

// entry returns the details of the manifest at p (resolved, inside root),
// reading it only when it is not cached as it is now. A manifest over the
// cap is not read: it gets no details (and is logged once per version). An
// error is a failure to read the file; a manifest that does not parse is an
// entry with Error set.
func (c *listingCache) entry(root *os.Root, p string, logger *log.Logger) (modelEntry, error) {
	fi, err := root.Stat(p)
	if err != nil {
		return modelEntry{}, err
	}
	if e, ok := c.byPath[p]; ok && e.size == fi.Size() && e.mtime.Equal(fi.ModTime()) {
		return e.ent, nil
	}
	var ent modelEntry
	if fi.Size() <= c.max {
		f, err := root.Open(p)
		if err != nil {
			return modelEntry{}, err
		}
		defer f.Close()
		if fi, err = f.Stat(); err != nil {
			return modelEntry{}, err
		}
		data, err := io.ReadAll(io.LimitReader(f, c.max+1))
		if err != nil {
			return modelEntry{}, err
		}
		if int64(len(data)) <= c.max {
			c.parses.Add(1)
			if m, err := manifest.Parse(data); err != nil {
				ent.Error = err.Error()
			} else {
				ent.FormatVersion, ent.Arch, ent.Quant = m.FormatVersion, m.Arch, m.Quant
				ent.Bytes, ent.Shards, ent.Tensors = m.TotalBytes(), len(m.Shards), len(m.Tensors)
			}
			c.byPath[p] = cachedEntry{size: fi.Size(), mtime: fi.ModTime(), ent: ent}
			return ent, nil
		}
	}
	logger.Printf("models: %s is over %d bytes: listed without its details, not read", sanitizeMsg(p, 300), c.max)
	c.byPath[p] = cachedEntry{size: fi.Size(), mtime: fi.ModTime(), ent: ent}
	return ent, nil
}

// forget drops the entries of manifests a listing no longer found.
func (c *listingCache) forget(seen map[string]bool) {
	for p := range c.byPath {
		if !seen[p] {
			delete(c.byPath, p)
		}
	}
}
