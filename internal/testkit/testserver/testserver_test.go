package testserver

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestServer(t *testing.T) {
	models := t.TempDir()
	if err := os.MkdirAll(filepath.Join(models, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("0123456789"), 10000)
	if err := os.WriteFile(filepath.Join(models, "m", "s.bin"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Start(Options{Mounts: []Mount{{"/", t.TempDir()}, {"/wasmllm.wasm", filepath.Join(models, "m", "s.bin")}, {"/models/", models}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get := func(rng string) (*http.Response, []byte, error) {
		req, _ := http.NewRequest("GET", s.URL+"/models/m/s.bin", nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return resp, data, err
	}

	s.CutOnce("/models/m/s.bin", 4000)
	if _, data, err := get(""); err == nil || len(data) != 4000 {
		t.Errorf("cut: %d bytes, error %v", len(data), err)
	}
	resp, data, err := get("bytes=4000-")
	if err != nil || resp.StatusCode != 206 || !bytes.Equal(data, body[4000:]) {
		t.Errorf("resume: %v %v, %d bytes", err, resp, len(data))
	}
	if _, data, err := get(""); err != nil || !bytes.Equal(data, body) {
		t.Errorf("after the cut: %d bytes, error %v", len(data), err)
	}
	if resp, _, err := get(""); err != nil || resp.Header.Get("Cross-Origin-Embedder-Policy") != "require-corp" {
		t.Errorf("headers %v %v", err, resp)
	}
	if resp, err := http.Get(s.URL + "/wasmllm.wasm"); err != nil || resp.Header.Get("Content-Type") != "application/wasm" {
		t.Errorf("wasm: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}

	s.SetRate(400 << 10)
	start := time.Now()
	if _, data, err := get(""); err != nil || !bytes.Equal(data, body) {
		t.Errorf("throttled: %d bytes, error %v", len(data), err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("100 KB at 400 KB/s took %v", d)
	}
	s.SetRate(0)

	s.SetOffline(true)
	if _, _, err := get(""); err == nil {
		t.Error("offline: the request succeeded")
	}
	s.SetOffline(false)

	// The client retries a dropped idempotent request, so the offline one
	// may be logged more than once.
	reqs := s.Requests("/models/m/")
	if len(reqs) < 6 || reqs[5].Status != 0 || !reqs[0].Cut || reqs[0].Bytes != 4000 || reqs[1].Range != "bytes=4000-" || reqs[1].Status != 206 {
		t.Errorf("log:\n%v", reqs)
	}
}
