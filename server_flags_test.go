package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wasmllm/server/openai"
)

func TestAPIFlags(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte("  sk-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c, err := parseFlags([]string{"-upstream", "http://gpu:8000/v1", "-upstream-key-file", key, "-upstream-timeout", "90s", "-max-body", "1000"}, &stderr)
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	if a := c.API; a.Upstream != "http://gpu:8000/v1" || a.UpstreamKey != "sk-secret" || a.UpstreamTimeout != 90*time.Second || a.MaxBody != 1000 || a.Engine {
		t.Errorf("-upstream flags: %+v", a)
	}
	c, err = parseFlags([]string{"-api", "-api-context", "8192", "-api-queue", "3", "-api-threads", "2"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if a := c.API; !a.Engine || a.Context != 8192 || a.Queue != 3 || a.Threads != 2 || a.MaxBody != openai.DefaultMaxBody || a.Upstream != "" {
		t.Errorf("-api flags: %+v", a)
	}
	if c, _ := parseFlags(nil, &stderr); c.API.Engine || c.API.Upstream != "" || c.API.Queue != openai.DefaultQueue {
		t.Errorf("defaults: %+v", c.API)
	}

	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	spaced := filepath.Join(dir, "spaced")
	os.WriteFile(spaced, []byte("sk one\n"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-api", "-upstream", "http://gpu:8000"}, "-api and -upstream are exclusive"},
		{[]string{"-upstream-key-file", key}, "-upstream-key-file needs -upstream"},
		{[]string{"-upstream", "gpu:8000"}, "want an http:// or https:// URL"},
		{[]string{"-upstream", "http://u:p@gpu"}, "-upstream-key-file"},
		{[]string{"-upstream", "http://gpu", "-upstream-key-file", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"-upstream", "http://gpu", "-upstream-key-file", empty}, "is empty"},
		{[]string{"-upstream", "http://gpu", "-upstream-key-file", spaced}, "one word"},
		{[]string{"-api", "-api-queue", "-1"}, "must not be negative"},
		{[]string{"-api", "-max-body", "0"}, "-max-body must be positive"},
	} {
		stderr.Reset()
		_, err := parseFlags(c.args, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.args, err, c.want)
			continue
		}
		// The command says why it does not start.
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: stderr %q does not say %q", c.args, stderr.String(), c.want)
		}
	}
}
