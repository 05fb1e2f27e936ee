package server

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"wasmllm/manifest"
)

// fileKind says where a file came from, which decides its caching (and, in
// a model folder, whether it is served as a download).
type fileKind int

const (
	filePage  fileKind = iota // under -web
	fileWasm                  // the -wasm file
	fileModel                 // under -models
)

// serveFile serves name from inside dir, never outside it: the folder is
// opened as an os.Root, which refuses ".." and symlinks that leave it.
// Hidden names (a segment starting with '.') are not served, whether named
// by the request or reached through a symlink (see resolve).
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
		h.fileError(w, r, err)
		return
	}
	defer root.Close()
	target, err := resolve(root, name)
	if err != nil {
		h.fileError(w, r, err)
		return
	}
	fi, err := root.Stat(target)
	switch {
	case err != nil:
		h.fileError(w, r, err)
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
	served, enc := target, ""
	vary := compressible(base) && !hashed
	if vary {
		for _, e := range preferredEncodings(r.Header.Values("Accept-Encoding")) {
			// A sibling older than the file is stale (rebuilt page, old .gz): skip it.
			sib, err := resolve(root, name+encodingExt[e])
			if err != nil {
				continue
			}
			if vfi, err := root.Stat(sib); err == nil && vfi.Mode().IsRegular() && !vfi.ModTime().Before(fi.ModTime()) {
				served, enc = sib, e
				break
			}
		}
	}
	f, err := root.Open(served)
	if err != nil {
		h.fileError(w, r, err)
		return
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		h.fileError(w, r, err)
		return
	}
	if !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}

	hd := w.Header()
	hd.Set("Content-Type", contentType(base))
	if kind == fileModel && !isModelFile(name) {
		// Anything else in a model folder (a stray page, an image, a
		// readme) is only ever downloaded, never shown on this origin.
		hd.Set("Content-Type", "application/octet-stream")
		hd.Set("Content-Disposition", "attachment")
	}
	if kind == filePage && !h.corsAny && h.corsEnabled() && r.Header.Get("Origin") == "" && isScript(base) {
		// A worker's importScripts is a no-cors request with no Origin
		// (and, from a blob worker, no Referer): the app's own classic
		// scripts, public code, stay loadable by the pages CORS lets in,
		// as wasmllm-chat.js's cross-origin worker loads them.
		hd.Set("Cross-Origin-Resource-Policy", "cross-origin")
	}
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
	serveContent(w, r, base, fi.ModTime(), fi.Size(), f)
}

// isModelFile reports whether name, relative to the models folder, is a
// file the loader fetches from a model folder (NAME/FILE): the manifest, a
// content-hashed shard, or a tokenizer file as cmd/convert writes them
// (api.TokenizerFiles). They keep their types; anything else is served
// as a download.
func isModelFile(name string) bool {
	dir, file, ok := strings.Cut(name, "/")
	if !ok || dir == "" || strings.Contains(file, "/") {
		return false
	}
	switch file {
	case manifest.ManifestFile, "tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja",
		"tokenizer.gguf", "tokenizer.bin", "tokenizer.model":
		return true
	}
	if manifest.IsHashedName(file) {
		return true
	}
	// A llama2.c tok<V>.bin.
	v, ok := strings.CutPrefix(file, "tok")
	v, ok2 := strings.CutSuffix(v, ".bin")
	return ok && ok2 && v != "" && strings.Trim(v, "0123456789") == ""
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

// isScript reports whether name is a script by its extension.
func isScript(name string) bool {
	return strings.HasPrefix(contentType(name), "text/javascript")
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
