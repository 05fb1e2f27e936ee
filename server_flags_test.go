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
	c, err = parseFlags([]string{"-api", "-api-context", "8192", "-api-queue", "3", "-api-threads", "2", "-api-kv-dtype", "q8"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseFlags([]string{"-api", "-api-kv-dtype", "q4"}, &stderr); err == nil || !strings.Contains(err.Error(), "-api-kv-dtype") {
		t.Errorf("-api-kv-dtype q4: %v", err)
	}
	if a := c.API; !a.Engine || a.Context != 8192 || a.Queue != 3 || a.Threads != 2 || a.KVDType != "q8" || a.MaxBody != openai.DefaultMaxBody || a.Upstream != "" {
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

// TestClientKeyFlags: the client key comes from -api-key-file or
// WASMLLM_API_KEY (never the command line, where ps shows it); /v1/ on an
// address other machines reach needs it or -no-api-key, and -cors '*'
// with an upstream key needs it.
func TestClientKeyFlags(t *testing.T) {
	t.Setenv(apiKeyEnv, "")
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	os.WriteFile(key, []byte("sk-client\n"), 0o600)
	upKey := filepath.Join(dir, "upkey")
	os.WriteFile(upKey, []byte("sk-upstream\n"), 0o600)
	var stderr bytes.Buffer
	c, err := parseFlags([]string{"-api", "-api-key-file", key, "-addr", "0.0.0.0:8080"}, &stderr)
	if err != nil || c.API.Key != "sk-client" {
		t.Fatalf("-api-key-file: %q, %v %s", c.API.Key, err, stderr.String())
	}
	c, err = parseFlags([]string{"-upstream", "http://gpu:8000", "-upstream-key-file", upKey, "-api-key-file", key, "-cors", "*"}, &stderr)
	if err != nil || c.API.Key != "sk-client" || c.API.UpstreamKey != "sk-upstream" {
		t.Fatalf("-cors '*' with both keys: %+v, %v", c.API, err)
	}
	c, err = parseFlags([]string{"-api", "-addr", "[::]:8080", "-no-api-key", "-allowed-hosts", "chat.example.com,.lan", "-max-client-conns", "100"}, &stderr)
	if err != nil || !c.API.NoKey || c.API.Key != "" || len(c.AllowedHosts) != 2 || c.AllowedHosts[1] != ".lan" || c.Limits.MaxClientConns != 100 {
		t.Fatalf("-no-api-key: %+v, %v", c, err)
	}
	t.Setenv(apiKeyEnv, " sk-env\n")
	if c, err = parseFlags([]string{"-api", "-addr", "0.0.0.0:8080"}, &stderr); err != nil || c.API.Key != "sk-env" {
		t.Fatalf("%s: %q, %v", apiKeyEnv, c.API.Key, err)
	}
	if c, err = parseFlags(nil, &stderr); err != nil || c.API.Key != "" {
		t.Fatalf("%s without -api: %q, %v", apiKeyEnv, c.API.Key, err)
	}
	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"-api", "-addr", "0.0.0.0:8080"}, "-no-api-key"},
		{"", []string{"-upstream", "http://gpu:8000", "-addr", ":8080"}, "-api-key-file"},
		{"", []string{"-api", "-addr", "192.168.1.10:8080"}, "can be reached from other machines"},
		{"", []string{"-upstream", "http://gpu:8000", "-upstream-key-file", upKey, "-cors", "*"}, "-cors '*' with -upstream-key-file"},
		{"", []string{"-api-key-file", key}, "-api-key-file needs -api or -upstream"},
		{"", []string{"-api", "-api-key-file", filepath.Join(dir, "missing")}, "-api-key-file: open"},
		{"", []string{"-api", "-api-key-file", key, "-no-api-key"}, "choose one"},
		{"", []string{"-api", "-max-client-conns", "-1"}, "must not be negative"},
		{"sk-env", []string{"-api", "-api-key-file", key}, "both give a client key"},
		{"sk env", []string{"-api"}, apiKeyEnv + ": the key must be one word"},
		{"sk-é", []string{"-api"}, "printable ASCII"},
	} {
		t.Setenv(apiKeyEnv, c.env)
		stderr.Reset()
		_, err := parseFlags(c.args, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s=%q %q: %v; want %q", apiKeyEnv, c.env, c.args, err, c.want)
		}
	}
	// The help says why the key is not a flag.
	stderr.Reset()
	parseFlags([]string{"-h"}, &stderr)
	if !strings.Contains(stderr.String(), "would show in ps") || !strings.Contains(stderr.String(), apiKeyEnv) {
		t.Errorf("-h:\n%s", stderr.String())
	}
}
