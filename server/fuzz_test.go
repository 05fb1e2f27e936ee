package server

import (
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
)

// FuzzCleanPath: whatever request path cleanPath accepts is already clean
// and relative, with no way up and no encoded separators.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/app.js", "/models/tiny/", "/../x", "/a/%2e%2e/b", "/a%2fb", "/a//b", "/a/./b", "/%00", "/a%5c..%5cb", "/..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		rel, ok := cleanPath(&http.Request{URL: u})
		if !ok {
			return
		}
		trimmed := strings.TrimSuffix(rel, "/")
		if strings.HasPrefix(rel, "/") || strings.ContainsAny(rel, "\\\x00") ||
			(trimmed != "" && path.Clean(trimmed) != trimmed) || slices.Contains(strings.Split(rel, "/"), "..") {
			t.Fatalf("cleanPath(%q) accepted %q", target, rel)
		}
	})
}

// FuzzPreferredEncodings: any Accept-Encoding yields only known encodings,
// each at most once.
func FuzzPreferredEncodings(f *testing.F) {
	for _, s := range []string{"", "gzip, br", "br;q=0, gzip", "*;q=0", "gzip;q=2", "br;q=NaN", "x-gzip"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		got := preferredEncodings([]string{accept})
		if len(got) > 2 || (len(got) == 2 && got[0] == got[1]) {
			t.Fatalf("%q: %v", accept, got)
		}
		for _, e := range got {
			if _, ok := encodingExt[e]; !ok {
				t.Fatalf("%q: unknown encoding %q", accept, e)
			}
		}
	})
}
