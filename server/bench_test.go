package server

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkServeShard measures downloading a 16 MiB shard over loopback.
func BenchmarkServeShard(b *testing.B) {
	dir := b.TempDir()
	name := "shard-00000-0123456789abcdef.bin"
	os.MkdirAll(filepath.Join(dir, "m"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "m", name), make([]byte, 16<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	h, err := newHandler(Config{Web: dir, Models: dir, Wasm: filepath.Join(dir, "x.wasm")}, log.New(io.Discard, "", 0))
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	b.SetBytes(16 << 20)
	for b.Loop() {
		resp, err := http.Get(srv.URL + "/models/m/" + name)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n != 16<<20 {
			b.Fatalf("%d, %d bytes", resp.StatusCode, n)
		}
	}
}
