package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"syscall"

	"wasmllm/manifest"
)

// fileKind says where a file came from, which decides its caching.
type fileKind int

const (
	filePage  fileKind = iota // under -web
	fileWasm                  // the -wasm file
	fileModel                 // under -models
)

// serveFile serves name from inside dir, never outside it: the folder is
// opened as an os.Root, which refuses ".." and symlinks that leave it.
// Hidden names (a segment starting with '.') are not served.
func (h *handler) serveFile(w http.ResponseWriter, r *http.Request, dir, name string, kind fileKind) {
	for _, s := range strings.Split(name, "/") {
		if strings.HasPrefix(s, ".") {
			http.NotFound(w, r)
			return
		}
	}
	if name == "" || strings.HasSuffix(name, "/") {
		name += "index.html"
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		h.notFound(w, r, err)
		return
	}
	defer root.Close()
	fi, err := root.Stat(name)
	switch {
	case err != nil:
		h.notFound(w, r, err)
		return
	case fi.IsDir():
		if path.Base(name) == "index.html" {
			http.NotFound(w, r)
			return
		}
		u := url.URL{Path: r.URL.Path + "/", RawQuery: r.URL.RawQuery}
		http.Redirect(w, r, u.String(), http.StatusMovedPermanently)
		return
	case !fi.Mode().IsRegular():
		http.NotFound(w, r)
		return
	}

	base := path.Base(name)
	hash, hashed := manifest.NameHash(base)
	hashed = hashed && kind == fileModel
	served, enc := name, ""
	vary := compressible(base) && !hashed
	if vary {
		for _, e := range preferredEncodings(r.Header.Values("Accept-Encoding")) {
			// A sibling older than the file is stale (rebuilt page, old .gz): skip it.
			if vfi, err := root.Stat(name + encodingExt[e]); err == nil && vfi.Mode().IsRegular() && !vfi.ModTime().Before(fi.ModTime()) {
				served, enc = name+encodingExt[e], e
				break
			}
		}
	}
	f, err := root.Open(served)
	if err != nil {
		h.notFound(w, r, err)
		return
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		h.notFound(w, r, err)
		return
	}

	hd := w.Header()
	hd.Set("Content-Type", contentType(base))
	if vary {
		hd.Add("Vary", "Accept-Encoding")
	}
	switch {
	case hashed:
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
		hd.Set("ETag", `"`+hash+`"`)
	default:
		if s := int64(h.maxAge.Seconds()); s > 0 {
			hd.Set("Cache-Control", fmt.Sprintf("public, max-age=%d", s))
		} else {
			hd.Set("Cache-Control", "no-cache")
		}
		suffix := ""
		if enc != "" {
			hd.Set("Content-Encoding", enc)
			suffix = "-" + enc
		}
		hd.Set("ETag", fmt.Sprintf(`"%x-%x%s"`, fi.ModTime().UnixNano(), fi.Size(), suffix))
	}
	http.ServeContent(w, r, base, fi.ModTime(), f)
}

// notFound answers 404, logging why when the cause is not simply a missing
// file (such as a symlink that leaves the root).
func (h *handler) notFound(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		h.log.Printf("refused %s: %v", sanitize(r.URL.EscapedPath(), 200), err)
	}
	http.NotFound(w, r)
}

// mimeTypes is fixed here rather than taken from the system's tables, which
// vary (and often lack .wasm, .mjs or .wgsl).
var mimeTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".htm":         "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".json":        "application/json",
	".map":         "application/json",
	".webmanifest": "application/manifest+json",
	".wasm":        "application/wasm",
	".wgsl":        "text/wgsl; charset=utf-8",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".jpg":         "image/jpeg",
	".jpeg":        "image/jpeg",
	".gif":         "image/gif",
	".webp":        "image/webp",
	".ico":         "image/x-icon",
	".woff":        "font/woff",
	".woff2":       "font/woff2",
	".txt":         "text/plain; charset=utf-8",
	".md":          "text/markdown; charset=utf-8",
	".jinja":       "text/plain; charset=utf-8",
	".gz":          "application/gzip",
}

func contentType(name string) string {
	if t, ok := mimeTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return "application/octet-stream"
}

// compressible reports whether name may have precompressed .br/.gz siblings.
// Shards (.bin) never do: quantised weights do not compress.
func compressible(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".html", ".htm", ".js", ".mjs", ".css", ".json", ".map", ".webmanifest", ".wasm", ".wgsl", ".svg", ".txt", ".md":
		return true
	}
	return false
}

var encodingExt = map[string]string{"br": ".br", "gzip": ".gz"}

// preferredEncodings returns the precompressed encodings the Accept-Encoding
// values allow, best first (brotli before gzip at equal q).
func preferredEncodings(values []string) []string {
	q := map[string]float64{}
	star := -1.0
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			qv := 1.0
			if k, val, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.TrimSpace(k) == "q" {
				if _, err := fmt.Sscanf(strings.TrimSpace(val), "%g", &qv); err != nil || qv < 0 || qv > 1 {
					qv = 0
				}
			}
			switch name {
			case "*":
				star = qv
			case "x-gzip":
				q["gzip"] = qv
			default:
				q[name] = qv
			}
		}
	}
	var out []string
	weight := func(enc string) float64 {
		if v, ok := q[enc]; ok {
			return v
		}
		return star
	}
	br, gz := weight("br"), weight("gzip")
	if br > 0 && br >= gz {
		out = append(out, "br")
	}
	if gz > 0 {
		out = append(out, "gzip")
	}
	if br > 0 && br < gz {
		out = append(out, "br")
	}
	return out
}
