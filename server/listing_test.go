package server

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// listing fetches /models/ through h.
func (f *fixture) listing(t *testing.T, h *handler) []modelEntry {
	t.Helper()
	resp := f.do(t, h, "GET", "/models/")
	var got modelListing
	if err := json.Unmarshal(body(t, resp), &got); resp.StatusCode != 200 || err != nil {
		t.Fatalf("listing: %d %v", resp.StatusCode, err)
	}
	return got.Models
}

func names(ms []modelEntry) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// TestListingSorted: the listing is in name order, whatever order the
// folder gives its entries in.
func TestListingSorted(t *testing.T) {
	f := newFixture(t)
	mf, _ := os.ReadFile(filepath.Join(f.dir, "models", "tiny", "manifest.json"))
	for i := range 30 {
		dir := filepath.Join(f.dir, "models", fmt.Sprintf("m%02d", (i*7)%30))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "manifest.json"), mf, 0o644)
	}
	got := names(f.listing(t, f.handler(t, f.cfg).(*handler)))
	if len(got) != 32 || !slices.IsSorted(got) {
		t.Errorf("listing order %v", got)
	}
}

// TestListingCache: a manifest is parsed once per version: listings reuse
// it until its size or modification time changes, and a removed folder is
// forgotten.
func TestListingCache(t *testing.T) {
	f := newFixture(t)
	h := f.handler(t, f.cfg).(*handler)
	parses := func() int64 { return h.listing.parses.Load() }
	f.listing(t, h)
	if n := parses(); n != 2 { // broken and tiny
		t.Fatalf("first listing parsed %d manifests, want 2", n)
	}
	for range 5 {
		f.listing(t, h)
	}
	if n := parses(); n != 2 {
		t.Errorf("repeated listings parsed %d manifests, want still 2", n)
	}
	// A new version (another size) is read.
	p := filepath.Join(f.dir, "models", "broken", "manifest.json")
	os.WriteFile(p, []byte(`{"format_version": 1, "shards": [`+strings.Repeat(" ", 10)), 0o644)
	f.listing(t, h)
	if n := parses(); n != 3 {
		t.Errorf("after the manifest grew: %d parses, want 3", n)
	}
	// The same size with a new mtime is read too; here it became valid.
	mf, _ := os.ReadFile(filepath.Join(f.dir, "models", "tiny", "manifest.json"))
	os.WriteFile(p, mf, 0o644)
	f.listing(t, h)
	later := time.Now().Add(time.Hour)
	os.Chtimes(p, later, later)
	ms := f.listing(t, h)
	if n := parses(); n != 5 {
		t.Errorf("after two changes: %d parses, want 5", n)
	}
	if ms[0].Name != "broken" || ms[0].Error != "" || ms[0].Tensors != 40 {
		t.Errorf("changed manifest listed as %+v", ms[0])
	}
	os.RemoveAll(filepath.Join(f.dir, "models", "broken"))
	if ms := f.listing(t, h); len(ms) != 1 || len(h.listing.byPath) != 1 {
		t.Errorf("after removing a folder: %v, %d cached", names(ms), len(h.listing.byPath))
	}
}

// TestListingManifestCap: a manifest over the cap is listed by name, with
// no details and no error, without being read: listing a 256 MiB one
// allocates next to nothing. It is logged once, not on every listing.
func TestListingManifestCap(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.dir, "models", "huge")
	os.MkdirAll(dir, 0o755)
	mf, err := os.Create(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	mf.WriteString(`{"format_version": 1, `)
	if err := mf.Truncate(256 << 20); err != nil { // sparse
		t.Fatal(err)
	}
	mf.Close()
	h := f.handler(t, f.cfg).(*handler)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ms := f.listing(t, h)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("listing allocated %d bytes: the big manifest was read", alloc)
	}
	if got := names(ms); !slices.Equal(got, []string{"broken", "huge", "tiny"}) {
		t.Fatalf("listing %v", got)
	}
	if huge := ms[1]; huge.Error != "" || huge.Tensors != 0 || huge.Manifest != "/models/huge/manifest.json" {
		t.Errorf("huge: %+v", huge)
	}
	if n := h.listing.parses.Load(); n != 2 {
		t.Errorf("%d manifests parsed, want 2", n)
	}
	f.listing(t, h)
	if n := strings.Count(f.logBuf.String(), "huge/manifest.json is over"); n != 1 {
		t.Errorf("logged %d times:\n%s", n, f.logBuf.String())
	}
	// With a smaller cap, an ordinary manifest is over it too.
	h = f.handler(t, f.cfg).(*handler)
	h.listing.max = 100
	if tiny := f.listing(t, h)[2]; tiny.Name != "tiny" || tiny.Tensors != 0 || tiny.Error != "" {
		t.Errorf("tiny over a 100-byte cap: %+v", tiny)
	}
}

// TestListingSkipsFIFO: a manifest.json that is a FIFO is skipped, where
// reading it would hang the listing.
func TestListingSkipsFIFO(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.dir, "models", "pipe")
	os.MkdirAll(dir, 0o755)
	if err := mkfifo(filepath.Join(dir, "manifest.json")); err != nil {
		t.Skip(err)
	}
	h := f.handler(t, f.cfg)
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "http://localhost/models/", nil))
		done <- w
	}()
	select {
	case w := <-done:
		var got modelListing
		json.Unmarshal(w.Body.Bytes(), &got)
		if w.Code != 200 || !slices.Equal(names(got.Models), []string{"broken", "tiny"}) {
			t.Errorf("listing %d %s", w.Code, w.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listing hangs on a FIFO manifest")
	}
}
